import SiloAuth
import SiloCore
import SiloHTTP
import SiloHashing
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The GCS XML API for objects on a live socket — reads with GCS's headers, uploads, copies, deletes,
/// listings (V1 and V2), errors in GCS's XML shape, percent-encoded buckets, virtual hosts and the empty `Bearer`
/// that Rust's object_store sends.
@Suite struct XMLAPITests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
        #expect(try client.send(method: "PUT", target: "/\(bucket)").status == 200)
    }

    func path(_ name: String, bucket: String = bucket) -> String { "/\(bucket)/" + name }

    @discardableResult
    func put(_ name: String, _ body: [UInt8], headers: HTTPHeaders = [:]) throws -> TestResponse {
        try client.send(method: "PUT", target: path(name), headers: headers, body: body)
    }

    func send(_ method: String, _ target: String, headers: HTTPHeaders = [:]) throws -> TestResponse {
        try client.send(method: method, target: target, headers: headers)
    }

    /// `<Code>` of an XML error body.
    func code(_ response: TestResponse) -> String? { XMLText.value("Code", in: response.text[...]) }

    static func md5Hex(_ body: [UInt8]) -> String {
        let md5 = MD5Hasher()
        md5.update(body)
        let hex = md5.finalize().map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }
        return "\"" + hex.joined() + "\""
    }

    static func hashes(_ body: [UInt8]) -> (md5: String, crc32c: String) {
        let hasher = ObjectHasher()
        hasher.update(body)
        let summary = hasher.finalize()
        return (Base64.encode(summary.md5), Checksums.crc32cBase64(summary.crc32c))
    }

    @Test("PUT stores the bytes and the metadata headers; GET and HEAD answer with GCS's XML headers")
    func putGetHead() throws {
        let body = bytes("hello, xml")
        let written = try put(
            "dir/a.txt", body,
            headers: [
                "Content-Type": "text/plain", "x-goog-meta-color": "blue", "Cache-Control": "no-cache",
                "Content-Disposition": "inline", "Content-Language": "en",
            ])
        #expect(written.status == 200)
        #expect(written.headers["ETag"] == Self.md5Hex(body))
        let generation = try #require(written.headers["x-goog-generation"])
        let (md5, crc) = Self.hashes(body)
        #expect(written.headers["x-goog-hash"] == "crc32c=\(crc),md5=\(md5)")

        let read = try client.get(path("dir/a.txt"))
        #expect(read.status == 200 && read.body == body)
        #expect(read.headers["ETag"] == Self.md5Hex(body))
        #expect(read.headers["x-goog-generation"] == generation)
        #expect(read.headers["x-goog-metageneration"] == "1")
        #expect(read.headers["x-goog-stored-content-length"] == String(body.count))
        #expect(read.headers["x-goog-stored-content-encoding"] == "identity")
        #expect(read.headers["x-goog-hash"] == "crc32c=\(crc),md5=\(md5)")
        #expect(read.headers["x-goog-storage-class"] == "STANDARD")
        #expect(read.headers["x-goog-meta-color"] == "blue")
        #expect(read.headers["Content-Type"] == "text/plain")
        #expect(read.headers["Cache-Control"] == "no-cache")
        #expect(read.headers["Content-Disposition"] == "inline")
        #expect(read.headers["Content-Language"] == "en")
        #expect(read.headers["Last-Modified"].flatMap { Timestamp(httpDate: $0) } != nil)

        let head = try send("HEAD", path("dir/a.txt"))
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.headers["Content-Length"] == String(body.count))
        #expect(head.headers["ETag"] == Self.md5Hex(body))

        // Without a Content-Type the object is octet-stream, and no disposition is invented.
        try put("plain", bytes("x"))
        let plain = try client.get(path("plain"))
        #expect(plain.headers["Content-Type"] == "application/octet-stream")
        #expect(plain.headers["Content-Disposition"] == nil)
    }

    @Test("Range answers 206 with Content-Range, or 416; validators and x-goog-if-* decide 304 and 412")
    func rangesAndConditions() throws {
        let body = pattern(1000)
        let generation = try #require(try put("r.bin", body).headers["x-goog-generation"])
        let ranged = try client.get(path("r.bin"), headers: ["Range": "bytes=10-19"])
        #expect(ranged.status == 206 && ranged.body == Array(body[10...19]))
        #expect(ranged.headers["Content-Range"] == "bytes 10-19/1000")
        #expect(try client.get(path("r.bin"), headers: ["Range": "bytes=5000-"]).status == 416)

        let etag = Self.md5Hex(body)
        #expect(try client.get(path("r.bin"), headers: ["If-None-Match": etag]).status == 304)
        #expect(try client.get(path("r.bin"), headers: ["If-Match": etag]).status == 200)
        let mismatch = try client.get(path("r.bin"), headers: ["If-Match": "\"0123\""])
        #expect(mismatch.status == 412 && code(mismatch) == "PreconditionFailed")
        let future = Timestamp(microseconds: Timestamp.now().microseconds + 3_600_000_000).rfc1123
        let past = Timestamp(microseconds: Timestamp.now().microseconds - 3_600_000_000).rfc1123
        #expect(try client.get(path("r.bin"), headers: ["If-Modified-Since": future]).status == 304)
        #expect(try client.get(path("r.bin"), headers: ["If-Modified-Since": past]).status == 200)
        #expect(try client.get(path("r.bin"), headers: ["If-Unmodified-Since": past]).status == 412)
        #expect(try client.get(path("r.bin"), headers: ["If-Unmodified-Since": future]).status == 200)

        #expect(try client.get(path("r.bin"), headers: ["x-goog-if-generation-match": generation]).status == 200)
        let wrong = try client.get(path("r.bin"), headers: ["x-goog-if-generation-match": "1"])
        #expect(wrong.status == 412 && code(wrong) == "PreconditionFailed")
        #expect(try client.get(path("r.bin"), headers: ["x-goog-if-metageneration-match": "1"]).status == 200)
        #expect(try client.get(path("r.bin"), headers: ["x-goog-if-metageneration-match": "2"]).status == 412)
        #expect(try client.get(path("r.bin"), headers: ["x-goog-if-generation-match": "-1"]).status == 400)

        #expect(try client.get(path("r.bin") + "?generation=\(generation)").body == body)
        let gone = try client.get(path("r.bin") + "?generation=\(Int64(generation)! + 1)")
        #expect(gone.status == 404 && code(gone) == "NoSuchKey")
    }

    @Test("response-content-type and the other response-* parameters override the stored headers")
    func responseOverrides() throws {
        try put("o.txt", bytes("o"), headers: ["Content-Type": "text/plain"])
        let query =
            "?response-content-type=application%2Fjson&response-content-disposition=attachment%3B%20filename%3Dx.json"
            + "&response-cache-control=max-age%3D60"
        let read = try client.get(path("o.txt") + query)
        #expect(read.status == 200)
        #expect(read.headers["Content-Type"] == "application/json")
        #expect(read.headers["Content-Disposition"] == "attachment; filename=x.json")
        #expect(read.headers["Cache-Control"] == "max-age=60")
        let injected = try client.get(path("o.txt") + "?response-content-type=text%2Fplain%0D%0AX-Evil%3A%201")
        #expect(injected.status == 400 && injected.headers["X-Evil"] == nil)
    }

    @Test("errors are GCS's XML: NoSuchKey, NoSuchBucket, and 404 before 400 for a bucket that does not exist")
    func errors() throws {
        let missing = try client.get(path("nope"))
        #expect(missing.status == 404 && code(missing) == "NoSuchKey")
        #expect(missing.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        let noBucket = try client.get(path("x", bucket: "no-such-bucket"))
        #expect(noBucket.status == 404 && code(noBucket) == "NoSuchBucket")
        // Outside emulator mode an upload does not create its bucket (in emulator mode it does, as v0 uploads do).
        var configuration = ServerConfiguration()
        configuration.createBucketsOnUpload = false
        let securedServer = try TestServer(configuration: configuration)
        let secured = securedServer.client()
        let upload = try secured.send(method: "PUT", target: path("x", bucket: "no-such-bucket"), body: bytes("x"))
        #expect(upload.status == 404 && code(upload) == "NoSuchBucket")
        #expect(try secured.send(method: "POST", target: "/no-such-bucket/m?uploads").status == 404)
        #expect(code(try secured.send(method: "POST", target: "/no-such-bucket/m?uploads")) == "NoSuchBucket")
        #expect(try client.get("/no-such-bucket").status == 404)
        #expect(try send("HEAD", "/no-such-bucket").status == 404)
        #expect(try send("HEAD", "/\(bucket)").status == 200)
    }

    @Test("PUT checks Content-MD5 and x-goog-hash against the bytes (BadDigest), before the object exists")
    func digests() throws {
        let body = bytes("checked bytes")
        let (md5, crc) = Self.hashes(body)
        let other = Self.hashes(bytes("other")).md5
        let bad = try put("d.txt", body, headers: ["Content-MD5": other])
        #expect(bad.status == 400 && code(bad) == "BadDigest")
        #expect(try client.get(path("d.txt")).status == 404, "a refused upload leaves no object")
        let malformed = try put("d.txt", body, headers: ["Content-MD5": "not base64!"])
        #expect(malformed.status == 400 && code(malformed) == "InvalidDigest")
        let badCRC = try put("d.txt", body, headers: ["x-goog-hash": "crc32c=AAAAAA=="])
        #expect(badCRC.status == 400 && code(badCRC) == "BadDigest")
        #expect(try put("d.txt", body, headers: ["Content-MD5": md5]).status == 200)
        #expect(try put("d.txt", body, headers: ["x-goog-hash": "crc32c=\(crc),md5=\(md5)"]).status == 200)
        var two = HTTPHeaders()
        two.add("x-goog-hash", "crc32c=\(crc)")
        two.add("x-goog-hash", "md5=\(md5)")
        #expect(try put("d.txt", body, headers: two).status == 200)
    }

    @Test("PUT: x-goog-if-generation-match (0: must not exist), storage class and a canned ACL")
    func putOptions() throws {
        #expect(try put("c.txt", bytes("1"), headers: ["x-goog-if-generation-match": "0"]).status == 200)
        let again = try put("c.txt", bytes("2"), headers: ["x-goog-if-generation-match": "0"])
        #expect(again.status == 412 && code(again) == "PreconditionFailed")
        #expect(try client.get(path("c.txt")).body == bytes("1"))
        let generation = try #require(try client.get(path("c.txt")).headers["x-goog-generation"])
        #expect(try put("c.txt", bytes("3"), headers: ["x-goog-if-generation-match": generation]).status == 200)

        let classed = try put("cold.txt", bytes("c"), headers: ["x-goog-storage-class": "NEARLINE"])
        #expect(classed.status == 200)
        #expect(try client.get(path("cold.txt")).headers["x-goog-storage-class"] == "NEARLINE")
        #expect(try put("cold.txt", bytes("c"), headers: ["x-goog-storage-class": "WARM"]).status == 400)

        #expect(try put("pub.txt", bytes("p"), headers: ["x-goog-acl": "public-read"]).status == 200)
        let acl = try client.get("/storage/v1/b/\(bucket)/o/pub.txt/acl")
        #expect(acl.text.contains("allUsers"))
        #expect(try put("pub.txt", bytes("p"), headers: ["x-goog-acl": "public-read-write"]).status == 400)
        #expect(try put("m.txt", bytes("m"), headers: ["x-goog-meta-k": "v\u{1}"]).status == 400)
    }

    @Test("x-goog-copy-source copies (COPY or REPLACE metadata, a source generation, source conditions)")
    func copy() throws {
        let body = bytes("copied bytes")
        let source = try put("src/a%20b.txt", body, headers: ["Content-Type": "text/plain", "x-goog-meta-k": "v"])
        let generation = try #require(source.headers["x-goog-generation"])
        // Percent-encoded, bucket included, with a leading slash.
        let copied = try send(
            "PUT", path("dst/copy.txt"), headers: ["x-goog-copy-source": "/demo%2Eappspot%2Ecom/src%2Fa%20b.txt"])
        #expect(copied.status == 200)
        #expect(XMLText.value("ETag", in: copied.text[...]) == Self.md5Hex(body))
        #expect(XMLText.value("LastModified", in: copied.text[...]).flatMap { Timestamp(rfc3339: $0) } != nil)
        let read = try client.get(path("dst/copy.txt"))
        #expect(read.body == body && read.headers["Content-Type"] == "text/plain")
        #expect(read.headers["x-goog-meta-k"] == "v")

        // object_store's form: no leading slash; REPLACE takes this request's metadata.
        let replaced = try send(
            "PUT", path("dst/replaced.txt"),
            headers: [
                "x-goog-copy-source": "\(bucket)/src%2Fa%20b.txt", "x-goog-metadata-directive": "REPLACE",
                "Content-Type": "application/json", "x-goog-meta-n": "w",
            ])
        #expect(replaced.status == 200)
        let replacedRead = try client.get(path("dst/replaced.txt"))
        #expect(replacedRead.headers["Content-Type"] == "application/json")
        #expect(replacedRead.headers["x-goog-meta-n"] == "w" && replacedRead.headers["x-goog-meta-k"] == nil)

        let source2 = "/\(bucket)/src/a%20b.txt"
        let pinned = try send(
            "PUT", path("dst/pinned.txt"),
            headers: ["x-goog-copy-source": source2, "x-goog-copy-source-generation": generation])
        #expect(pinned.status == 200)
        let failed = try send(
            "PUT", path("dst/failed.txt"),
            headers: ["x-goog-copy-source": source2, "x-goog-copy-source-if-generation-match": "1"])
        #expect(failed.status == 412)
        let etagFailed = try send(
            "PUT", path("dst/failed.txt"),
            headers: ["x-goog-copy-source": source2, "x-goog-copy-source-if-match": "\"00\""])
        #expect(etagFailed.status == 412)
        #expect(
            try send(
                "PUT", path("dst/ok.txt"),
                headers: ["x-goog-copy-source": source2, "x-goog-copy-source-if-match": Self.md5Hex(body)]
            ).status == 200)
        let exists = try send(
            "PUT", path("dst/copy.txt"), headers: ["x-goog-copy-source": source2, "x-goog-if-generation-match": "0"])
        #expect(exists.status == 412, "the destination's condition")
        let noSource = try send("PUT", path("dst/x"), headers: ["x-goog-copy-source": "/\(bucket)/missing"])
        #expect(noSource.status == 404 && code(noSource) == "NoSuchKey")
        let noBucket = try send("PUT", path("dst/x"), headers: ["x-goog-copy-source": "/no-such-bucket/missing"])
        #expect(noBucket.status == 404 && code(noBucket) == "NoSuchBucket")
        #expect(try send("PUT", path("dst/x"), headers: ["x-goog-copy-source": "nobucketslash"]).status == 400)
        #expect(try client.get(path("dst/failed.txt")).status == 404)
    }

    @Test("DELETE answers 204, then 404 NoSuchKey; x-goog-if-generation-match and ?generation= are honoured")
    func delete() throws {
        let generation = try #require(try put("del.txt", bytes("d")).headers["x-goog-generation"])
        #expect(try send("DELETE", path("del.txt"), headers: ["x-goog-if-generation-match": "1"]).status == 412)
        #expect(try send("DELETE", path("del.txt") + "?generation=\(Int64(generation)! + 1)").status == 404)
        #expect(try send("DELETE", path("del.txt"), headers: ["x-goog-if-generation-match": generation]).status == 204)
        let again = try send("DELETE", path("del.txt"))
        #expect(again.status == 404 && code(again) == "NoSuchKey")
    }

    func keys(_ response: TestResponse) -> [String] {
        XMLText.elements("Contents", in: response.text[...]).compactMap { XMLText.value("Key", in: $0) }
    }

    func prefixes(_ response: TestResponse) -> [String] {
        XMLText.elements("CommonPrefixes", in: response.text[...]).compactMap { XMLText.value("Prefix", in: $0) }
    }

    @Test("GET /{bucket}: version 1 with prefix, delimiter, marker, max-keys and NextMarker")
    func listV1() throws {
        let names = ["a.txt", "b/1.txt", "b/2.txt", "c/1.txt", "d.txt", "e&<'>.txt"]
        for name in names { try put(PercentCoding.encodeComponent(name), bytes(name)) }
        let all = try client.get("/\(bucket)")
        #expect(all.status == 200 && all.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        #expect(all.text.contains("<ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01\">"))
        #expect(keys(all) == names)
        #expect(XMLText.value("IsTruncated", in: all.text[...]) == "false")
        let first = try #require(XMLText.elements("Contents", in: all.text[...]).first)
        #expect(XMLText.value("Size", in: first) == "5")
        #expect(XMLText.value("ETag", in: first) == Self.md5Hex(bytes("a.txt")))
        #expect(XMLText.value("Generation", in: first) != nil && XMLText.value("MetaGeneration", in: first) == "1")
        #expect(XMLText.value("StorageClass", in: first) == "STANDARD")
        #expect(XMLText.value("LastModified", in: first).flatMap { Timestamp(rfc3339: $0) } != nil)

        let folded = try client.get("/\(bucket)?delimiter=%2F")
        #expect(keys(folded) == ["a.txt", "d.txt", "e&<'>.txt"] && prefixes(folded) == ["b/", "c/"])
        let under = try client.get("/\(bucket)?prefix=b%2F&delimiter=%2F")
        #expect(keys(under) == ["b/1.txt", "b/2.txt"] && prefixes(under).isEmpty)

        // Paging by two with the delimiter: every key and prefix exactly once.
        var seen: [String] = []
        var marker = ""
        for _ in 0..<10 {
            let page = try client.get(
                "/\(bucket)?delimiter=%2F&max-keys=2&marker=" + PercentCoding.encodeComponent(marker))
            seen += keys(page) + prefixes(page)
            guard XMLText.value("IsTruncated", in: page.text[...]) == "true" else { break }
            marker = try #require(XMLText.value("NextMarker", in: page.text[...]))
        }
        #expect(seen.sorted() == ["a.txt", "b/", "c/", "d.txt", "e&<'>.txt"])
        #expect(try client.get("/\(bucket)?max-keys=x").status == 400)
    }

    @Test("GET /{bucket}?list-type=2: continuation-token, start-after, KeyCount, NextContinuationToken")
    func listV2() throws {
        let names = (0..<5).map { "k\($0)" }
        for name in names { try put(name, bytes(name)) }
        var seen: [String] = []
        var token: String?
        for _ in 0..<10 {
            var target = "/\(bucket)?list-type=2&max-keys=2"
            if let token { target += "&continuation-token=" + PercentCoding.encodeComponent(token) }
            let page = try client.get(target)
            #expect(page.status == 200)
            #expect(XMLText.value("KeyCount", in: page.text[...]) == String(keys(page).count))
            seen += keys(page)
            token = XMLText.value("NextContinuationToken", in: page.text[...])
            #expect((token != nil) == (XMLText.value("IsTruncated", in: page.text[...]) == "true"))
            if token == nil { break }
        }
        #expect(seen == names)
        let after = try client.get("/\(bucket)?list-type=2&start-after=k2")
        #expect(keys(after) == ["k3", "k4"])
        #expect(try client.get("/\(bucket)?list-type=2&continuation-token=%21%21").status == 400)
    }

    @Test("the bucket may be percent-encoded, as object_store encodes the whole path")
    func percentEncodedBucket() throws {
        let encoded = "/demo%2Eappspot%2Ecom/dir%2Ffile%2Etxt"
        #expect(try client.send(method: "PUT", target: encoded, body: bytes("enc")).status == 200)
        #expect(try client.get(path("dir/file.txt")).body == bytes("enc"))
        #expect(try client.get(encoded).body == bytes("enc"))
        #expect(keys(try client.get("/demo%2Eappspot%2Ecom?list-type=2&prefix=dir%2F")) == ["dir/file.txt"])
    }

    @Test("virtual-host style: Host {bucket}.localhost addresses the bucket; other hosts route by path")
    func virtualHost() throws {
        try put("v/x.txt", bytes("vh"))
        let host: HTTPHeaders = ["Host": "\(bucket).localhost:\(server.port)"]
        #expect(try client.get("/v/x.txt", headers: host).body == bytes("vh"))
        #expect(try client.get("/v%2Fx.txt", headers: host).body == bytes("vh"))
        #expect(keys(try client.get("/?list-type=2", headers: host)) == ["v/x.txt"])
        let gcsHost: HTTPHeaders = ["Host": "\(bucket).storage.googleapis.com"]
        #expect(try client.get("/v/x.txt", headers: gcsHost).body == bytes("vh"))
        // A host with no configured suffix keeps path style (and the Firebase API).
        #expect(try client.get(path("v/x.txt"), headers: ["Host": "example.com"]).body == bytes("vh"))
        #expect(try client.get("/", headers: ["Host": "localhost"]).status == 200)
    }

    @Test("virtual hosts are off with no suffixes configured")
    func virtualHostOff() throws {
        var configuration = ServerConfiguration()
        configuration.virtualHostSuffixes = []
        let server = try TestServer(backend: .memory, configuration: configuration)
        let client = server.client()
        #expect(try client.send(method: "PUT", target: "/\(bucket)").status == 200)
        #expect(try client.send(method: "PUT", target: path("x"), body: bytes("x")).status == 200)
        let host: HTTPHeaders = ["Host": "\(bucket).localhost"]
        #expect(try client.get("/x", headers: host).status == 404)
        #expect(try client.get(path("x"), headers: host).body == bytes("x"))
    }

    @Test("the upload hooks reach their handlers")
    func hooks() throws {
        // XMLMultipartTests and XMLResumableTests test these; here only that the hooks lead there.
        #expect(try client.send(method: "POST", target: path("m") + "?uploads").status == 200)
        #expect(
            code(try client.send(method: "PUT", target: path("m") + "?partNumber=1&uploadId=u", body: [1]))
                == "NoSuchUpload")
        #expect(
            try client.send(method: "POST", target: path("m"), headers: ["x-goog-resumable": "start"]).status == 201)
    }

    @Test("PUT /{bucket} creates a bucket (409 when it exists); DELETE only an empty one")
    func buckets() throws {
        #expect(try client.send(method: "PUT", target: "/made-by-xml").status == 200)
        let twice = try client.send(method: "PUT", target: "/made-by-xml")
        #expect(twice.status == 409 && code(twice) == "BucketAlreadyOwnedByYou")
        #expect(try client.send(method: "PUT", target: "/made-by-xml/o", body: bytes("o")).status == 200)
        let full = try send("DELETE", "/made-by-xml")
        #expect(full.status == 409 && code(full) == "BucketNotEmpty")
        #expect(try send("DELETE", "/made-by-xml/o").status == 204)
        #expect(try send("DELETE", "/made-by-xml").status == 204)
        #expect(try send("HEAD", "/made-by-xml").status == 404)
    }
}

/// On a secured server the XML API is the JSON API's: admin, or what GCS grants the public. An empty `Bearer`
/// (object_store without credentials) is an anonymous caller, not a refused one.
@Suite struct XMLAPIAccessTests {
    @Test("Authorization: Bearer with no token reads a public object and is refused a private one with 401")
    func emptyBearer() throws {
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let key = "xml-admin-key-0123456789abcdef0123"
        var auth = TokenVerifier.Configuration()
        auth.adminKeys = try AdminKeys(keys: [key])
        let server = try TestServer(configuration: configuration, credentials: TokenVerifier(auth))
        let client = server.client()
        let admin: HTTPHeaders = ["Authorization": "Bearer \(key)"]
        let anonymous = try client.send(method: "PUT", target: "/\(bucket)", headers: ["Authorization": "Bearer "])
        #expect(anonymous.status == 401 && XMLText.value("Code", in: anonymous.text[...]) == "AuthenticationRequired")
        #expect(try client.send(method: "PUT", target: "/\(bucket)", headers: admin).status == 200)
        var publicRead = admin
        publicRead.add("x-goog-acl", "public-read")
        let uploaded = try client.send(
            method: "PUT", target: "/\(bucket)/public.txt", headers: publicRead, body: bytes("open"))
        #expect(uploaded.status == 200)
        #expect(
            try client.send(method: "PUT", target: "/\(bucket)/private.txt", headers: admin, body: bytes("closed"))
                .status == 200)
        for authorization in ["Bearer ", "Bearer", "bearer   "] {
            let open = try client.get("/\(bucket)/public.txt", headers: ["Authorization": authorization])
            #expect(open.status == 200 && open.body == bytes("open"), "\(authorization)")
            let closed = try client.get("/\(bucket)/private.txt", headers: ["Authorization": authorization])
            #expect(closed.status == 401, "\(authorization)")
            #expect(XMLText.value("Code", in: closed.text[...]) == "AuthenticationRequired")
        }
        let refused = try client.get("/\(bucket)/public.txt", headers: ["Authorization": "Bearer not-a-token"])
        #expect(refused.status == 401, "a token that does not verify is still refused")
        #expect(try client.get("/\(bucket)/public.txt", headers: ["Authorization": "Firebase "]).status == 401)
    }
}
