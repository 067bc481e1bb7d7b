import SiloCore
import SiloHTTP
import SiloHashing
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// v0 reads against a real server on a real socket.
@Suite struct V0ReadTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer(policy: VectorPolicy())
        client = server.client()
    }

    @Test("8.1.1 first read creates a token and bumps metageneration once")
    func firstReadCreatesToken() throws {
        // An object with no token (as a GCS upload leaves it): an empty firebaseStorageDownloadTokens.
        let up = try client.multipartUpload(
            "public/hello.txt",
            metadata: #"{"name":"public/hello.txt","metadata":{"firebaseStorageDownloadTokens":""}}"#,
            bytes("hello world"))
        #expect(up.status == 200)
        #expect(try up.string("downloadTokens") == nil)
        #expect(try up.string("metageneration") == "1")
        let first = try client.get(objectPath("public/hello.txt"))
        #expect(first.status == 200)
        let meta = try first.json()
        #expect(meta["size"] == .string("11"))
        #expect(meta["metageneration"] == .string("2"))
        #expect(meta["contentEncoding"] == .string("identity"))
        #expect(meta["name"] == .string("public/hello.txt"))
        #expect(meta["bucket"] == .string(bucket))
        #expect(matchesTimestamp(meta["timeCreated"]?.stringValue))
        #expect(matchesTimestamp(meta["updated"]?.stringValue))
        let token = try #require(meta["downloadTokens"]?.stringValue)
        #expect(!token.isEmpty)
        let second = try client.get(objectPath("public/hello.txt")).json()
        #expect(second["downloadTokens"] == .string(token))
        #expect(second["metageneration"] == .string("2"))
    }

    @Test("8.1.2 missing object is 404 JSON")
    func missing() throws {
        let r = try client.get(objectPath("public/missing"))
        #expect(r.status == 404)
        #expect(r.errorCode == 404)
    }

    @Test("8.1.3 denied read is 403 JSON, decided before existence")
    func denied() throws {
        let r = try client.get(objectPath("testing/secret"))
        #expect(r.status == 403)
        #expect(r.errorCode == 403)
    }

    @Test("8.1.4 download headers")
    func downloadHeaders() throws {
        try client.mediaUpload("public/hello.txt", bytes("hello world"), contentType: "text/plain")
        let r = try client.get(objectPath("public/hello.txt") + "?alt=media")
        #expect(r.status == 200)
        #expect(r.body == bytes("hello world"))
        #expect(r.headers["Content-Type"] == "text/plain")
        #expect(r.headers["Content-Length"] == "11")
        #expect(r.headers["Accept-Ranges"] == "bytes")
        #expect(r.headers["ETag"] != nil)
        let md5 = Base64.encode(MD5Hasher.digest(bytes("hello world")))
        let crc = Checksums.crc32cBase64(CRC32C.checksum(bytes("hello world")))
        #expect(r.headers["X-Goog-Hash"] == "crc32c=\(crc),md5=\(md5)")
        #expect(r.headers["Content-Disposition"]?.hasSuffix("filename*=utf-8''hello.txt") == true)
        #expect(r.headers["Last-Modified"]?.hasSuffix("GMT") == true)
    }

    /// Download headers and metadata JSON are kept per version (generation and metageneration); a metadata change must
    /// show at once.
    @Test func downloadHeadersFollowMetadataChanges() throws {
        try client.mediaUpload("public/changing.txt", bytes("abc"), contentType: "text/plain")
        let path = objectPath("public/changing.txt") + "?alt=media"
        let before = try client.get(path)
        #expect(before.headers["Content-Type"] == "text/plain")
        let metageneration = try #require(before.headers["X-Goog-Metageneration"].flatMap { Int($0) })
        let patched = try client.send(
            method: "PATCH", target: objectPath("public/changing.txt"), headers: ["Content-Type": "application/json"],
            body: bytes(#"{"contentType":"image/png","cacheControl":"no-store"}"#))
        #expect(patched.status == 200)
        let after = try client.get(path)
        #expect(after.headers["Content-Type"] == "image/png")
        // The metadata JSON is kept per version too.
        let metadata = try client.get(objectPath("public/changing.txt")).json()
        #expect(metadata["contentType"] == .string("image/png"))
        #expect(metadata["cacheControl"] == .string("no-store"))
        #expect(after.headers["Cache-Control"] == "no-store")
        #expect(after.headers["X-Goog-Metageneration"] == String(metageneration + 1))
        #expect(after.headers["ETag"] != before.headers["ETag"])
        // A new version under the same name has its own headers, hash included.
        try client.mediaUpload("public/changing.txt", bytes("abcd"), contentType: "text/csv")
        let replaced = try client.get(path)
        #expect(replaced.body == bytes("abcd"))
        #expect(replaced.headers["Content-Type"] == "text/csv")
        let md5 = Base64.encode(MD5Hasher.digest(bytes("abcd")))
        #expect(replaced.headers["X-Goog-Hash"]?.hasSuffix("md5=\(md5)") == true)
        #expect(try client.get(objectPath("public/changing.txt")).json()["contentType"] == .string("text/csv"))
    }

    /// A store may let versions of different objects share one blob (the listing benchmark's seeded rows do): what
    /// is kept per version must not be keyed by the blob.
    @Test func objectsSharingABlobKeepTheirOwnHeadersAndMetadata() throws {
        try client.mediaUpload("public/first.txt", bytes("shared"), contentType: "text/plain")
        let first = try #require(
            try server.metadata.object(try BucketName(bucket), try ObjectName("public/first.txt"), generation: nil))
        var fields = first.fields
        fields.contentType = "text/csv"
        fields.contentDisposition = nil  // so the default one names the object
        _ = try server.metadata.insertUploaded(
            ObjectDraft(
                bucket: first.bucket, name: try ObjectName("public/second.txt"), blob: first.blob,
                blobID: first.blobID, fields: fields),
            conditions: .none, at: first.timeCreated)
        for (name, type) in [("first.txt", "text/plain"), ("second.txt", "text/csv"), ("first.txt", "text/plain")] {
            let media = try client.get(objectPath("public/" + name) + "?alt=media")
            #expect(media.body == bytes("shared"))
            #expect(media.headers["Content-Type"] == type)
            #expect(media.headers["Content-Disposition"]?.hasSuffix(name) == true)
            let metadata = try client.get(objectPath("public/" + name)).json()
            #expect(metadata["name"] == .string("public/" + name))
            #expect(metadata["contentType"] == .string(type))
        }
    }

    @Test("8.1.4 content disposition of an object without one")
    func attachmentDisposition() throws {
        try client.multipartUpload(
            "public/testFile", metadata: #"{"name":"public/testFile","contentDisposition":null}"#, bytes("x"))
        // A null in upload metadata is "absent", so the v0 default applies; remove it with PATCH to get none.
        let patched = try client.send(
            method: "PATCH", target: objectPath("public/testFile"), headers: ["Content-Type": "application/json"],
            body: bytes(#"{"contentDisposition":null}"#))
        #expect(patched.status == 200)
        #expect(try patched.string("contentDisposition") == nil)
        let r = try client.get(objectPath("public/testFile") + "?alt=media")
        #expect(r.headers["Content-Disposition"] == "attachment; filename*=testFile")
    }

    @Test(
        "8.1.5–6 ranges",
        arguments: [
            ("bytes=0-4", 206, "hello", "bytes 0-4/11"),
            ("bytes=6-", 206, "world", "bytes 6-10/11"),
            ("bytes=0-100", 206, "hello world", "bytes 0-10/11"),
            ("bytes=-5", 206, "world", "bytes 6-10/11"),
            ("bytes=50-", 416, "", "bytes */11"),
            ("bytes=zz", 200, "hello world", nil),
            ("bytes=0-1,3-4", 200, "hello world", nil),
        ] as [(String, Int, String, String?)])
    func ranges(range: String, status: Int, body: String, contentRange: String?) throws {
        try client.mediaUpload("public/hello.txt", bytes("hello world"))
        let r = try client.get(objectPath("public/hello.txt") + "?alt=media", headers: ["Range": range])
        #expect(r.status == status)
        #expect(r.text == body)
        #expect(r.headers["Content-Range"] == contentRange)
    }

    @Test("8.1.6 empty object with a range is 200 empty")
    func emptyRange() throws {
        try client.mediaUpload("public/empty", [])
        let r = try client.get(objectPath("public/empty") + "?alt=media", headers: ["Range": "bytes=0-10"])
        #expect(r.status == 200)
        #expect(r.body.isEmpty)
    }

    @Test("ETag is stable and If-None-Match answers 304")
    func etag() throws {
        try client.mediaUpload("public/e.txt", bytes("etag"))
        let a = try client.get(objectPath("public/e.txt") + "?alt=media")
        let b = try client.get(objectPath("public/e.txt") + "?alt=media")
        let tag = try #require(a.headers["ETag"])
        #expect(b.headers["ETag"] == tag)
        let c = try client.get(objectPath("public/e.txt") + "?alt=media", headers: ["If-None-Match": tag])
        #expect(c.status == 304)
        #expect(c.body.isEmpty)
        let d = try client.get(objectPath("public/e.txt") + "?alt=media", headers: ["If-None-Match": "\"other\""])
        #expect(d.status == 200)
    }

    @Test("8.1.7 a download token replaces rules; a wrong one falls back to the rules with the caller's credentials")
    func downloadToken() throws {
        let admin: HTTPHeaders = ["Authorization": "Bearer owner"]
        let up = try client.mediaUpload("testing/secret", bytes("classified"), headers: admin)
        #expect(up.status == 200)
        let token = try #require(try up.string("downloadTokens"))
        let ok = try client.get(objectPath("testing/secret") + "?alt=media&token=\(token)")
        #expect(ok.status == 200)
        #expect(ok.text == "classified")
        let bogus = try client.get(objectPath("testing/secret") + "?alt=media&token=bogus")
        #expect(bogus.status == 403)
        let none = try client.get(objectPath("testing/secret") + "?alt=media")
        #expect(none.status == 403)
        let signedIn = try client.get(
            objectPath("testing/secret") + "?alt=media",
            headers: ["Authorization": "Firebase \(emulatorToken(uid: "u1"))"])
        #expect(signedIn.status == 200)
        // The emulator grants on a valid token OR the rules: a wrong token with credentials the rules allow reads
        // (pyrebase4 sends the ID token itself as `token=`).
        let wrongTokenSignedIn = try client.get(
            objectPath("testing/secret") + "?alt=media&token=\(emulatorToken(uid: "u1"))",
            headers: ["Authorization": "Firebase \(emulatorToken(uid: "u1"))"])
        #expect(wrongTokenSignedIn.status == 200 && wrongTokenSignedIn.text == "classified")
    }

    @Test("8.1.8 gzip objects are transcoded unless the client accepts gzip")
    func gzip() throws {
        let plain = pattern(300_000).map { $0 % 16 + 65 }
        let compressed = try GzipDeflater.compress(plain)
        try client.multipartUpload(
            "public/z.txt", metadata: #"{"name":"public/z.txt","contentEncoding":"gzip"}"#, compressed)
        let decoded = try client.get(objectPath("public/z.txt") + "?alt=media")
        #expect(decoded.status == 200)
        #expect(decoded.body == plain)
        #expect(decoded.headers["Content-Encoding"] == nil)
        #expect(decoded.headers["Content-Length"] == nil)
        #expect(decoded.headers["X-Goog-Hash"] == nil)
        let raw = try client.get(
            objectPath("public/z.txt") + "?alt=media", headers: ["Accept-Encoding": "gzip, deflate"])
        #expect(raw.headers["Content-Encoding"] == "gzip")
        #expect(raw.body == compressed)
    }

    @Test("8.1.9 name encodings resolve to the same stored names")
    func nameEncodings() throws {
        let names = ["public/a b.txt", "public/a+b.txt", "public/100%.txt", "public/emoji/😀.png", "public/x$,=:@.txt"]
        for name in names {
            let up = try client.mediaUpload(name, bytes(name))
            #expect(up.status == 200, "\(name)")
            #expect(try up.string("name") == name)
            let got = try client.get(objectPath(name) + "?alt=media")
            #expect(got.text == name)
        }
        // iOS leaves $ , = : @ unescaped in the path.
        let raw = try client.get("/v0/b/\(bucket)/o/public%2Fx$,=:@.txt?alt=media")
        #expect(raw.text == "public/x$,=:@.txt")
        // A raw + in the path is a plus; in the query it is a space.
        let plus = try client.get("/v0/b/\(bucket)/o/public%2Fa+b.txt?alt=media")
        #expect(plus.text == "public/a+b.txt")
        let spaced = try client.send(method: "POST", target: bucketPath() + "?name=public/q+r.txt", body: bytes("q"))
        #expect(try spaced.string("name") == "public/q r.txt")
        // Hand-built URLs with raw slashes.
        let slashes = try client.get("/v0/b/\(bucket)/o/public/emoji/%F0%9F%98%80.png?alt=media")
        #expect(slashes.text == "public/emoji/😀.png")
    }
}
