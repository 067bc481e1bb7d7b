import SiloCore
import SiloHTTP
import SiloHashing
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The XML API's multipart uploads on a live socket, over the default stores (SQLite + disk) and the in-memory
/// ones: every operation and its errors in GCS's XML shape, part ETags, the composed object's CRC32C (combined from
/// the parts' without reading them) against the CRC32C of the whole, parts dropped at completion and abort,
/// abandoned uploads reclaimed by maintenance, uploads surviving a restart.
@Suite struct XMLMultipartTests {
    static let mib = 1 << 20
    /// Three parts as transfer_manager cuts a file: 5 MiB, 5 MiB and the rest.
    static let parts = [pattern(5 << 20, seed: 1), pattern(5 << 20, seed: 2), pattern(123_457, seed: 3)]

    // MARK: The whole protocol

    @Test(arguments: TestServer.Backend.allCases)
    func initiateUploadListCompleteAndReadBack(_ backend: TestServer.Backend) throws {
        let (server, client) = try Self.serve(backend)
        defer { withExtendedLifetime(server) {} }
        let name = "dir/mpu é+%.bin"
        let initiated = try client.send(
            method: "POST", target: Self.path(name) + "?uploads",
            headers: [
                "Content-Type": "video/mp4", "Cache-Control": "private", "Content-Disposition": "inline",
                "Content-Language": "en-US", "x-goog-meta-key_a": "value_a",
                "x-goog-custom-time": "2026-01-02T03:04:05.123456Z",
                "x-goog-storage-class": "nearline",
            ])
        #expect(initiated.status == 200)
        #expect(
            initiated.text.contains(#"<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#)
        )
        #expect(XMLText.value("Bucket", in: Substring(initiated.text)) == bucket)
        #expect(XMLText.value("Key", in: Substring(initiated.text)) == name)
        let uploadID = try #require(XMLText.value("UploadId", in: Substring(initiated.text)))

        // Out of order, and part 1 twice: the second upload of a number replaces the first.
        var etags: [Int: String] = [:]
        for (number, bytes) in [
            (2, Self.parts[1]), (1, pattern(5 << 20, seed: 9)), (3, Self.parts[2]), (1, Self.parts[0]),
        ] {
            let put = try client.send(
                method: "PUT", target: Self.path(name) + "?partNumber=\(number)&uploadId=\(uploadID)", body: bytes)
            #expect(put.status == 200, "\(put.text)")
            let md5 = MD5Hasher.digest(bytes)
            #expect(put.headers["ETag"] == "\"\(hex(md5))\"", "a part's ETag is its MD5, quoted")
            #expect(
                put.headers["x-goog-hash"]
                    == "crc32c=\(Checksums.crc32cBase64(CRC32C.checksum(bytes))),md5=\(Base64.encode(md5))")
            etags[number] = put.headers["ETag"]
        }

        let firstPage = try client.get(Self.path(name) + "?uploadId=\(uploadID)&max-parts=2")
        #expect(firstPage.status == 200)
        let listed = Substring(firstPage.text)
        #expect(XMLText.elements("PartNumber", in: listed) == ["1", "2"])
        #expect(XMLText.elements("Size", in: listed) == ["\(5 << 20)", "\(5 << 20)"])
        #expect(XMLText.elements("ETag", in: listed).map { XMLText.decode($0) } == [etags[1]!, etags[2]!])
        #expect(XMLText.value("IsTruncated", in: listed) == "true")
        #expect(XMLText.value("NextPartNumberMarker", in: listed) == "2")
        let secondPage = try client.get(Self.path(name) + "?uploadId=\(uploadID)&part-number-marker=2")
        #expect(XMLText.elements("PartNumber", in: Substring(secondPage.text)) == ["3"])
        #expect(XMLText.value("IsTruncated", in: Substring(secondPage.text)) == "false")

        let completion = Self.completion([(1, etags[1]!), (2, etags[2]!), (3, etags[3]!)])
        let completed = try client.send(
            method: "POST", target: Self.path(name) + "?uploadId=\(uploadID)", body: bytes(completion))
        #expect(completed.status == 200, "\(completed.text)")
        #expect(completed.text.contains("<CompleteMultipartUploadResult xmlns="))
        #expect(XMLText.value("Key", in: Substring(completed.text)) == name)
        let whole = Self.parts.reduce([], +)
        let crc = Checksums.crc32cBase64(CRC32C.checksum(whole))
        #expect(completed.headers["x-goog-hash"] == "crc32c=\(crc)", "a composed object has a CRC32C and no MD5")
        #expect(completed.headers["x-goog-component-count"] == "3")

        // The object as the JSON API shows it.
        let object = try client.get(Self.gcs(name)).json()
        #expect(object["size"]?.stringValue == String(whole.count))
        #expect(object["crc32c"]?.stringValue == crc, "the CRC32C combined from the parts' is the whole's")
        #expect(object["md5Hash"] == nil)
        #expect(object["componentCount"] == .number(3))
        #expect(object["contentType"]?.stringValue == "video/mp4")
        #expect(object["cacheControl"]?.stringValue == "private")
        #expect(object["contentDisposition"]?.stringValue == "inline")
        #expect(object["contentLanguage"]?.stringValue == "en-US")
        #expect(object["customTime"]?.stringValue == "2026-01-02T03:04:05.123456Z")
        #expect(object["storageClass"]?.stringValue == "NEARLINE")
        #expect(object["metadata"]?.objectValue?["key_a"]?.stringValue == "value_a")
        #expect(object["generation"]?.stringValue == completed.headers["x-goog-generation"])
        let media = try client.get(Self.gcs(name) + "?alt=media")
        #expect(media.body == whole)
        #expect(media.headers["X-Goog-Hash"] == "crc32c=\(crc)")

        // Every part is gone, the replaced first upload of part 1 included: only the object's blob is left.
        let live = try #require(try server.metadata.object(BucketName(bucket), ObjectName(name), generation: nil))
        #expect(try Self.storedBlobs(server) == [live.blobID])
        #expect(
            try server.metadata.sessions(idPrefix: "xml-mpu-part/\(uploadID)/", after: nil, limit: 10).isEmpty)

        // A completion repeated (its answer lost) answers the same; the upload takes nothing more.
        let again = try client.send(
            method: "POST", target: Self.path(name) + "?uploadId=\(uploadID)", body: bytes(completion))
        #expect(again.status == 200 && again.headers["x-goog-generation"] == completed.headers["x-goog-generation"])
        let late = try client.send(
            method: "PUT", target: Self.path(name) + "?partNumber=4&uploadId=\(uploadID)", body: [1])
        #expect(late.status == 404 && Self.code(late) == "NoSuchUpload")
        #expect(Self.code(try client.get(Self.path(name) + "?uploadId=\(uploadID)")) == "NoSuchUpload")
    }

    // MARK: Errors

    @Test func partRequestsAreCheckedWhereTheyEnter() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        let uploadID = try Self.initiate(client, "e")
        for number in ["0", "10001", "x", "-1"] {
            let refused = try client.send(
                method: "PUT", target: Self.path("e") + "?partNumber=\(number)&uploadId=\(uploadID)", body: [1])
            #expect(refused.status == 400, "partNumber \(number)")
        }
        let unknown = try client.send(
            method: "PUT", target: Self.path("e") + "?partNumber=1&uploadId=" + String(repeating: "a", count: 40),
            body: [1])
        #expect(unknown.status == 404 && Self.code(unknown) == "NoSuchUpload")
        let malformedID = try client.send(
            method: "PUT", target: Self.path("e") + "?partNumber=1&uploadId=../x", body: [1])
        #expect(malformedID.status == 404)
        let otherObject = try client.send(
            method: "PUT", target: Self.path("other") + "?partNumber=1&uploadId=\(uploadID)", body: [1])
        #expect(otherObject.status == 404, "an upload id names an upload of one object")

        let body = bytes("part bytes")
        let wrongMD5 = try client.send(
            method: "PUT", target: Self.path("e") + "?partNumber=1&uploadId=\(uploadID)",
            headers: ["Content-MD5": Base64.encode(MD5Hasher.digest(bytes("other")))], body: body)
        #expect(wrongMD5.status == 400 && Self.code(wrongMD5) == "BadDigest")
        let badMD5 = try client.send(
            method: "PUT", target: Self.path("e") + "?partNumber=1&uploadId=\(uploadID)",
            headers: ["Content-MD5": "not base64!"], body: body)
        #expect(badMD5.status == 400 && Self.code(badMD5) == "InvalidDigest")
        let wrongCRC = try client.send(
            method: "PUT", target: Self.path("e") + "?partNumber=1&uploadId=\(uploadID)",
            headers: ["x-goog-hash": "crc32c=AAAAAA=="], body: body)
        #expect(wrongCRC.status == 400 && Self.code(wrongCRC) == "BadDigest")
        let good = try client.send(
            method: "PUT", target: Self.path("e") + "?partNumber=1&uploadId=\(uploadID)",
            headers: [
                "Content-MD5": Base64.encode(MD5Hasher.digest(body)),
                "x-goog-hash": "crc32c=\(Checksums.crc32cBase64(CRC32C.checksum(body)))",
            ], body: body)
        #expect(good.status == 200)
        #expect(
            XMLText.elements("PartNumber", in: Substring(try client.get(Self.path("e") + "?uploadId=\(uploadID)").text))
                == ["1"], "refused parts were not kept")

        // Outside emulator mode (where uploads create their bucket).
        let secured = try Self.securedServer()
        let noBucket = try secured.client().send(method: "POST", target: "/no-such-bucket/x?uploads")
        #expect(noBucket.status == 404 && Self.code(noBucket) == "NoSuchBucket")
        let get = try client.send(method: "GET", target: Self.path("e") + "?uploads")
        #expect(get.status == 405 && Self.code(get) == "MethodNotAllowed")
    }

    @Test func completionChecksOrderETagsAndPartSizes() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        let uploadID = try Self.initiate(client, "c")
        let small = pattern(1_000, seed: 4)
        var etags: [Int: String] = [:]
        for (number, bytes) in [(1, Self.parts[0]), (2, small), (3, Self.parts[2])] {
            etags[number] =
                try client.send(
                    method: "PUT", target: Self.path("c") + "?partNumber=\(number)&uploadId=\(uploadID)", body: bytes
                ).headers["ETag"]
        }
        func complete(_ body: String) throws -> TestResponse {
            try client.send(method: "POST", target: Self.path("c") + "?uploadId=\(uploadID)", body: Array(body.utf8))
        }
        let cases: [(String, String)] = [
            (Self.completion([(2, etags[2]!), (1, etags[1]!)]), "InvalidPartOrder"),
            (Self.completion([(1, etags[1]!), (1, etags[1]!)]), "InvalidPartOrder"),
            (Self.completion([(1, etags[1]!), (3, etags[2]!)]), "InvalidPart"),
            (Self.completion([(1, etags[1]!), (4, etags[3]!)]), "InvalidPart"),
            (Self.completion([(1, etags[1]!), (2, etags[2]!), (3, etags[3]!)]), "EntityTooSmall"),
            ("<CompleteMultipartUpload></CompleteMultipartUpload>", "MalformedXML"),
            ("not xml", "MalformedXML"),
            ("<CompleteMultipartUpload><Part><ETag>x</ETag></Part></CompleteMultipartUpload>", "MalformedXML"),
        ]
        for (body, code) in cases {
            let refused = try complete(body)
            #expect(refused.status == 400, "\(body)")
            #expect(Self.code(refused) == code, "\(body): \(refused.text)")
            #expect(refused.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        }
        // A small part may be the last; ETags may come unquoted or entity-escaped, parts may be left out.
        let etag1 = etags[1]!.replacingQuotes(with: "&quot;")
        let etag2 = String(etags[2]!.dropFirst().dropLast()).uppercased()
        let done = try complete(Self.completion([(1, etag1), (2, etag2)]))
        #expect(done.status == 200, "\(done.text)")
        let object = try client.get(Self.gcs("c")).json()
        #expect(object["size"]?.stringValue == String(Self.parts[0].count + small.count))
        #expect(object["crc32c"]?.stringValue == Checksums.crc32cBase64(CRC32C.checksum(Self.parts[0] + small)))
        #expect(try client.get(Self.gcs("c") + "?alt=media").body == Self.parts[0] + small)
        // Part 3, not used, went with the others.
        let live = try #require(try server.metadata.object(BucketName(bucket), ObjectName("c"), generation: nil))
        #expect(try Self.storedBlobs(server) == [live.blobID])
    }

    @Test func abortDropsTheParts() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        let uploadID = try Self.initiate(client, "a")
        for number in 1...2 {
            _ = try client.send(
                method: "PUT", target: Self.path("a") + "?partNumber=\(number)&uploadId=\(uploadID)",
                body: pattern(1_000))
        }
        #expect(try Self.storedBlobs(server).count == 2)
        let aborted = try client.send(method: "DELETE", target: Self.path("a") + "?uploadId=\(uploadID)")
        #expect(aborted.status == 204)
        #expect(try Self.storedBlobs(server).isEmpty)
        let again = try client.send(method: "DELETE", target: Self.path("a") + "?uploadId=\(uploadID)")
        #expect(again.status == 404 && Self.code(again) == "NoSuchUpload")
        let part = try client.send(
            method: "PUT", target: Self.path("a") + "?partNumber=3&uploadId=\(uploadID)", body: [1])
        #expect(part.status == 404)
        let completion = try client.send(
            method: "POST", target: Self.path("a") + "?uploadId=\(uploadID)", body: bytes(Self.completion([(1, "x")])))
        #expect(completion.status == 404)
        #expect(try client.get(Self.gcs("a")).status == 404)
    }

    // MARK: Preconditions and bounds

    @Test func preconditionsAtInitiateHoldAtCompletion() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        try Self.put(client, "exists", bytes("old"))
        let early = try client.send(
            method: "POST", target: Self.path("exists") + "?uploads", headers: ["x-goog-if-generation-match": "0"])
        #expect(early.status == 412 && Self.code(early) == "PreconditionFailed")

        let uploadID = try Self.initiate(client, "later", headers: ["x-goog-if-generation-match": "0"])
        let etag = try client.send(
            method: "PUT", target: Self.path("later") + "?partNumber=1&uploadId=\(uploadID)", body: bytes("new")
        ).headers["ETag"]!
        try Self.put(client, "later", bytes("got in first"))
        let late = try client.send(
            method: "POST", target: Self.path("later") + "?uploadId=\(uploadID)",
            body: bytes(Self.completion([(1, etag)])))
        #expect(late.status == 412)
        #expect(try client.get(Self.gcs("later") + "?alt=media").text == "got in first")
        let bad = try client.send(
            method: "POST", target: Self.path("x") + "?uploads", headers: ["x-goog-if-generation-match": "-3"])
        #expect(bad.status == 400)
    }

    @Test func uploadsInProgressPerBucketAreBounded() throws {
        var configuration = ServerConfiguration()
        configuration.maxMultipartUploadsPerBucket = 2
        let (server, client) = try Self.serve(.embedded, configuration: configuration)
        defer { withExtendedLifetime(server) {} }
        let first = try Self.initiate(client, "1")
        _ = try Self.initiate(client, "2")
        let third = try client.send(method: "POST", target: Self.path("3") + "?uploads")
        #expect(third.status == 429 && Self.code(third) == "SlowDown")
        #expect(try client.send(method: "DELETE", target: Self.path("1") + "?uploadId=\(first)").status == 204)
        _ = try Self.initiate(client, "3")
    }

    // MARK: Listing uploads

    @Test func aBucketListsItsUploadsInProgress() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        var ids: [String: String] = [:]
        for name in ["logs/a", "logs/b", "img/c", "gone"] { ids[name] = try Self.initiate(client, name) }
        _ = try client.send(method: "DELETE", target: Self.path("gone") + "?uploadId=\(ids["gone"]!)")
        let all = Substring(try client.get("/\(bucket)?uploads").text)
        #expect(all.contains("<ListMultipartUploadsResult xmlns="))
        #expect(Set(XMLText.elements("Key", in: all)) == ["logs/a", "logs/b", "img/c"])
        let logs = Substring(try client.get("/\(bucket)?uploads&prefix=logs/").text)
        #expect(Set(XMLText.elements("Key", in: logs)) == ["logs/a", "logs/b"])
        let page = Substring(try client.get("/\(bucket)?uploads&max-uploads=2").text)
        #expect(XMLText.elements("UploadId", in: page).count == 2)
        #expect(XMLText.value("IsTruncated", in: page) == "true")
        let marker = try #require(XMLText.value("NextUploadIdMarker", in: page))
        let rest = Substring(try client.get("/\(bucket)?uploads&upload-id-marker=\(marker)").text)
        #expect(XMLText.elements("UploadId", in: rest).count == 1)
        #expect(Set(XMLText.elements("UploadId", in: page) + XMLText.elements("UploadId", in: rest)).count == 3)
    }

    // MARK: Lifetime

    /// What an upload left behind is reclaimed once it is older than the session lifetime: the upload, its parts and
    /// their blobs. The parts of an upload still in progress stay, however old they are themselves.
    @Test func maintenanceReclaimsAbandonedUploads() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        let abandoned = try Self.initiate(client, "abandoned")
        let kept = try Self.initiate(client, "kept")
        for (name, id) in [("abandoned", abandoned), ("kept", kept)] {
            _ = try client.send(
                method: "PUT", target: Self.path(name) + "?partNumber=1&uploadId=\(id)", body: pattern(2_000))
        }
        #expect(try Self.storedBlobs(server).count == 2)
        let lifetime = ServerConfiguration().sessionLifetimeSeconds
        let later = Timestamp(microseconds: Timestamp.now().microseconds + (lifetime + 60) * 1_000_000)
        // "kept" had a part uploaded just before the pass (which touches its upload).
        _ = try server.metadata.updateSession(id: "xml-mpu/\(bucket)/\(kept)") { $0.updated = later }
        let reclaimed = server.app.collectGarbage(graceSeconds: 0, now: later)
        #expect(reclaimed.sessions == 2, "the abandoned upload and its part")
        #expect(reclaimed.blobs == 1)
        #expect(try Self.storedBlobs(server).count == 1)
        #expect(Self.code(try client.get(Self.path("abandoned") + "?uploadId=\(abandoned)")) == "NoSuchUpload")
        let listed = try client.get(Self.path("kept") + "?uploadId=\(kept)")
        #expect(XMLText.elements("PartNumber", in: Substring(listed.text)) == ["1"])
    }

    /// A bucket's `AbortIncompleteMultipartUpload` rule aborts uploads begun `age` days ago (here only under `tmp/`).
    @Test func lifecycleAbortsIncompleteUploads() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        let rules =
            #"{"lifecycle":{"rule":[{"action":{"type":"AbortIncompleteMultipartUpload"},"#
            + #""condition":{"age":2,"matchesPrefix":["tmp/"]}}]}}"#
        let patched = try client.send(
            method: "PATCH", target: "/storage/v1/b/\(bucket)", headers: ["Content-Type": "application/json"],
            body: bytes(rules))
        #expect(patched.status == 200, "\(patched.text)")
        let temporary = try Self.initiate(client, "tmp/x")
        let kept = try Self.initiate(client, "keep/y")
        _ = try client.send(
            method: "PUT", target: Self.path("tmp/x") + "?partNumber=1&uploadId=\(temporary)", body: pattern(10))
        let day: Int64 = 86_400 * 1_000_000
        _ = server.app.collectGarbage(graceSeconds: 0, now: Timestamp(microseconds: Timestamp.now().microseconds + day))
        #expect(try client.get(Self.path("tmp/x") + "?uploadId=\(temporary)").status == 200, "one day old: kept")
        _ = server.app.collectGarbage(
            graceSeconds: 0, now: Timestamp(microseconds: Timestamp.now().microseconds + 3 * day))
        #expect(Self.code(try client.get(Self.path("tmp/x") + "?uploadId=\(temporary)")) == "NoSuchUpload")
        #expect(try client.get(Self.path("keep/y") + "?uploadId=\(kept)").status == 200)
        #expect(try Self.storedBlobs(server).isEmpty, "the aborted upload's part went with it")
    }

    @Test func anUploadSurvivesARestart() throws {
        let directory = try TemporaryDirectory()
        var first: TestServer? = try TestServer(directory: directory)
        let c1 = first!.client()
        try Self.createBucket(c1)
        let uploadID = try Self.initiate(c1, "r", headers: ["Content-Type": "text/plain"])
        let put1 = try c1.send(
            method: "PUT", target: Self.path("r") + "?partNumber=1&uploadId=\(uploadID)", body: Self.parts[0])
        let etag1 = try #require(put1.headers["ETag"])
        first!.shutdown()
        first = nil

        let second = try TestServer(directory: directory)
        let c2 = second.client()
        let put2 = try c2.send(
            method: "PUT", target: Self.path("r") + "?partNumber=2&uploadId=\(uploadID)", body: Self.parts[2])
        let etag2 = try #require(put2.headers["ETag"])
        let done = try c2.send(
            method: "POST", target: Self.path("r") + "?uploadId=\(uploadID)",
            body: bytes(Self.completion([(1, etag1), (2, etag2)])))
        #expect(done.status == 200, "\(done.text)")
        #expect(try c2.get(Self.gcs("r") + "?alt=media").body == Self.parts[0] + Self.parts[2])
        #expect(try c2.get(Self.gcs("r")).string("contentType") == "text/plain")
        withExtendedLifetime(second) {}
    }

    // MARK: Keys, names, compose

    @Test func customerSuppliedKeysAndKMSKeyNamesAreKept() throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        let key = (0..<32).map { UInt8($0) }
        let keyHeaders: HTTPHeaders = [
            "x-goog-encryption-algorithm": "AES256", "x-goog-encryption-key": Base64.encode(key),
            "x-goog-encryption-key-sha256": Base64.encode(SHA256.digest(key)),
        ]
        var initiateHeaders = keyHeaders
        initiateHeaders.add("x-goog-encryption-kms-key-name", "projects/p/locations/us/keyRings/r/cryptoKeys/k")
        let uploadID = try Self.initiate(client, "secret", headers: initiateHeaders)
        let keyless = try client.send(
            method: "PUT", target: Self.path("secret") + "?partNumber=1&uploadId=\(uploadID)", body: bytes("s"))
        #expect(keyless.status == 400, "parts of a keyed upload need its key")
        let etag = try client.send(
            method: "PUT", target: Self.path("secret") + "?partNumber=1&uploadId=\(uploadID)", headers: keyHeaders,
            body: bytes("s")
        ).headers["ETag"]!
        let done = try client.send(
            method: "POST", target: Self.path("secret") + "?uploadId=\(uploadID)", headers: keyHeaders,
            body: bytes(Self.completion([(1, etag)])))
        #expect(done.status == 200)
        let object = try client.get(Self.gcs("secret")).json()
        #expect(object["kmsKeyName"]?.stringValue == "projects/p/locations/us/keyRings/r/cryptoKeys/k")
        #expect(
            object["customerEncryption"]?.objectValue?["keySha256"]?.stringValue == Base64.encode(SHA256.digest(key)))
        #expect(try client.get(Self.gcs("secret") + "?alt=media").status == 400, "no key, no bytes")
        let wrong = try client.get(
            Self.gcs("secret") + "?alt=media",
            headers: [
                "x-goog-encryption-algorithm": "AES256",
                "x-goog-encryption-key": Base64.encode([UInt8](repeating: 7, count: 32)),
            ])
        #expect(wrong.status == 400)
        #expect(try client.get(Self.gcs("secret") + "?alt=media", headers: keyHeaders).text == "s")
        let badKey = try client.send(
            method: "POST", target: Self.path("k2") + "?uploads",
            headers: ["x-goog-encryption-algorithm": "AES256", "x-goog-encryption-key": "c2hvcnQ="])
        #expect(badKey.status == 400)
    }

    @Test(arguments: ["../example_bucket/mpu_file", "\u{1F681}", "a/b/c.txt", "sp ace+plus%25"])
    func namesArriveAsTheyWereEncoded(_ name: String) throws {
        let (server, client) = try Self.serve(.embedded)
        defer { withExtendedLifetime(server) {} }
        let uploadID = try Self.initiate(client, name)
        let etag = try client.send(
            method: "PUT", target: Self.path(name) + "?partNumber=1&uploadId=\(uploadID)", body: bytes(name)
        ).headers["ETag"]!
        let done = try client.send(
            method: "POST", target: Self.path(name) + "?uploadId=\(uploadID)", body: bytes(Self.completion([(1, etag)]))
        )
        #expect(done.status == 200)
        #expect(try client.get(Self.gcs(name) + "?alt=media").text == name)
    }

    /// The JSON API's compose goes the same way as a completion: no byte read back, CRC32C combined, no MD5.
    @Test(arguments: TestServer.Backend.allCases)
    func jsonComposeSharesTheComposition(_ backend: TestServer.Backend) throws {
        let (server, client) = try Self.serve(backend)
        defer { withExtendedLifetime(server) {} }
        try Self.put(client, "p1", Self.parts[2])
        try Self.put(client, "p2", bytes("tail"))
        let composed = try client.send(
            method: "POST", target: Self.gcs("joined") + "/compose", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"sourceObjects":[{"name":"p1"},{"name":"p2"},{"name":"p1"}]}"#))
        #expect(composed.status == 200, "\(composed.text)")
        let whole = Self.parts[2] + bytes("tail") + Self.parts[2]
        let object = try composed.json()
        #expect(object["crc32c"]?.stringValue == Checksums.crc32cBase64(CRC32C.checksum(whole)))
        #expect(object["md5Hash"] == nil && object["componentCount"] == .number(3))
        #expect(try client.get(Self.gcs("joined") + "?alt=media").body == whole)
        // p1's, p2's and the composition's blobs, unless the store keeps p2's four bytes inline.
        #expect(try Self.storedBlobs(server).count == (server.metadata.inlineBlobLimit > 0 ? 2 : 3))
    }

    // MARK: Helpers

    static func serve(_ backend: TestServer.Backend, configuration: ServerConfiguration = ServerConfiguration())
        throws -> (TestServer, HTTPTestClient)
    {
        let server = try TestServer(backend: backend, configuration: configuration)
        let client = server.client()
        try createBucket(client)
        return (server, client)
    }

    static func createBucket(_ client: HTTPTestClient) throws {
        let made = try client.send(
            method: "POST", target: "/storage/v1/b?project=demo", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"name":"\#(bucket)"}"#))
        #expect(made.status == 200 || made.status == 409)
    }

    /// The XML API's path of an object, every segment percent-encoded (as object_store and google-cloud-storage do).
    /// A server outside emulator mode: uploads to a bucket that does not exist are 404 there.
    static func securedServer() throws -> TestServer {
        var configuration = ServerConfiguration()
        configuration.createBucketsOnUpload = false
        return try TestServer(configuration: configuration)
    }

    static func path(_ name: String) -> String { "/\(bucket)/" + PercentCoding.encodeComponent(name) }
    static func gcs(_ name: String) -> String { "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name) }

    static func initiate(_ client: HTTPTestClient, _ name: String, headers: HTTPHeaders = [:]) throws -> String {
        let initiated = try client.send(method: "POST", target: path(name) + "?uploads", headers: headers)
        #expect(initiated.status == 200, "\(initiated.text)")
        return try #require(XMLText.value("UploadId", in: Substring(initiated.text)))
    }

    static func put(_ client: HTTPTestClient, _ name: String, _ body: [UInt8]) throws {
        let made = try client.send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name="
                + PercentCoding.encodeComponent(name), body: body)
        #expect(made.status == 200)
    }

    static func completion(_ parts: [(Int, String)]) -> String {
        "<CompleteMultipartUpload>"
            + parts.map { "<Part><PartNumber>\($0.0)</PartNumber><ETag>\($0.1)</ETag></Part>" }.joined()
            + "</CompleteMultipartUpload>"
    }

    static func code(_ response: TestResponse) -> String? { XMLText.value("Code", in: Substring(response.text)) }

    static func storedBlobs(_ server: TestServer) throws -> Set<BlobID> {
        server.app.waitForBlobReclaims()
        return Set(try (server.blobs as? any BlobListing)?.allBlobIDs() ?? [])
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

extension String {
    fileprivate func replacingQuotes(with entity: String) -> String {
        split(separator: "\"", omittingEmptySubsequences: false).joined(separator: entity)
    }
}
