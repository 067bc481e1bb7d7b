import SiloCore
import SiloHTTP
import SiloHashing
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// Where production GCS answers differently from what Silo used to, each as a client written against GCS sees it:
/// bucket listings per project, which boolean fields a resource carries, `customTime` that only moves forward, soft
/// delete of the versions an overwrite or a restore replaces, and emulator mode creating buckets on every API's
/// uploads.
@Suite struct GCSDifferencesTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
    }

    func gcs(_ name: String, bucket: String = bucket) -> String {
        "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name)
    }

    func json(_ method: String, _ target: String, _ body: String) throws -> TestResponse {
        try client.send(
            method: method, target: target, headers: ["Content-Type": "application/json"], body: bytes(body))
    }

    func gcsUpload(_ name: String, _ text: String, bucket: String = bucket) throws -> TestResponse {
        try client.send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=" + PercentCoding.encodeComponent(name),
            headers: ["Content-Type": "text/plain"], body: bytes(text))
    }

    func bucketNames(_ response: TestResponse) throws -> [String] {
        try response.json()["items"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue } ?? []
    }

    @Test("The contentEncoding upload parameter sets the stored encoding on media, multipart and resumable uploads")
    func contentEncodingUploadParameter() throws {
        let plain = pattern(20_000).map { $0 % 16 + 65 }
        let compressed = try GzipDeflater.compress(plain)
        let upload = "/upload/storage/v1/b/\(bucket)/o?contentEncoding=gzip"
        // Media, multipart (the parameter wins over the metadata's encoding, as on GCS), resumable (set at the start).
        #expect(
            try client.send(
                method: "POST", target: upload + "&uploadType=media&name=media.txt",
                headers: ["Content-Type": "text/plain"], body: compressed
            ).status == 200)
        let boundary = "b0undary"
        var multipart = bytes(
            "--\(boundary)\r\nContent-Type: application/json\r\n\r\n"
                + #"{"name":"multi.txt","contentType":"text/plain","contentEncoding":"identity"}"#
                + "\r\n--\(boundary)\r\nContent-Type: text/plain\r\n\r\n")
        multipart += compressed + bytes("\r\n--\(boundary)--\r\n")
        #expect(
            try client.send(
                method: "POST", target: upload + "&uploadType=multipart",
                headers: ["Content-Type": "multipart/related; boundary=\(boundary)"], body: multipart
            ).status == 200)
        let start = try client.send(
            method: "POST", target: upload + "&uploadType=resumable&name=resumed.txt",
            headers: ["Content-Type": "application/json", "X-Upload-Content-Type": "text/plain"], body: bytes("{}"))
        let location = try #require(start.headers["Location"])
        // http://HOST:PORT/upload/…: the path is what follows the third slash.
        let parts = location.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        let path = "/" + (parts.count == 4 ? String(parts[3]) : "")
        #expect(try client.send(method: "PUT", target: path, body: compressed).status == 200)
        for name in ["media.txt", "multi.txt", "resumed.txt"] {
            #expect(try client.get(gcs(name)).json()["contentEncoding"]?.stringValue == "gzip", "\(name)")
            let decoded = try client.get(gcs(name) + "?alt=media")
            #expect(decoded.body == plain && decoded.headers["Content-Encoding"] == nil, "\(name)")
            #expect(decoded.headers["X-Goog-Stored-Content-Encoding"] == "gzip", "\(name)")
            let raw = try client.get(gcs(name) + "?alt=media", headers: ["Accept-Encoding": "gzip"])
            #expect(raw.body == compressed && raw.headers["Content-Encoding"] == "gzip", "\(name)")
        }
        // It can reach a response header, so it is checked like the metadata field.
        #expect(
            try client.send(
                method: "POST",
                target:
                    "/upload/storage/v1/b/\(bucket)/o?contentEncoding=gz%0D%0AX-Evil:%201&uploadType=media&name=evil.txt",
                body: compressed
            ).status == 400)
    }

    @Test("Deleting every generation a versions listing shows empties a versioned bucket, which then deletes")
    func emptyingAVersionedBucket() throws {
        let name = "versioned-\(UInt32.random(in: 0...UInt32.max))"
        #expect(
            try json("POST", "/storage/v1/b?project=p", #"{"name":"\#(name)","versioning":{"enabled":true}}"#).status
                == 200)
        for object in ["a.txt", "a.txt", "dir/b.txt", "dir/b.txt", "dir/sub/c.txt"] {
            #expect(try gcsUpload(object, object, bucket: name).status == 200)
        }
        #expect(try client.send(method: "DELETE", target: gcs("dir/sub/c.txt", bucket: name)).status == 204)
        // A version-aware recursive delete as gcsfs and gsutil do it: page through versions=true (small pages, so
        // deletes and pages interleave), delete each generation; the last one over the XML API.
        var versions: [(String, String)] = []
        var token: String?
        repeat {
            let page = try client.get(
                "/storage/v1/b/\(name)/o?versions=true&maxResults=2"
                    + (token.map { "&pageToken=" + PercentCoding.encodeComponent($0) } ?? "")
            ).json()
            for item in page["items"]?.arrayValue ?? [] {
                if let object = item.objectValue, let n = object["name"]?.stringValue,
                    let g = object["generation"]?.stringValue
                {
                    versions.append((n, g))
                }
            }
            token = page["nextPageToken"]?.stringValue
        } while token != nil
        #expect(versions.count == 5)
        for (object, generation) in versions.dropLast() {
            #expect(
                try client.send(method: "DELETE", target: gcs(object, bucket: name) + "?generation=\(generation)")
                    .status == 204)
        }
        let (object, generation) = try #require(versions.last)
        #expect(
            try client.send(
                method: "DELETE",
                target: "/\(name)/" + PercentCoding.encodeComponent(object) + "?generation=\(generation)"
            ).status == 204)
        #expect(try client.get("/storage/v1/b/\(name)/o?versions=true").json()["items"] == nil)
        #expect(try client.send(method: "DELETE", target: "/storage/v1/b/\(name)").status == 204)
        #expect(try client.get("/storage/v1/b/\(name)").status == 404)
    }

    @Test("GET /b?project=P lists P's buckets: those created in P and P's default bucket, not another project's")
    func bucketListingByProject() throws {
        #expect(try json("POST", "/storage/v1/b?project=alpha", #"{"name":"alpha-data"}"#).status == 200)
        #expect(try json("POST", "/storage/v1/b?project=beta", #"{"name":"beta-data"}"#).status == 200)
        // Default buckets, as v0 uploads create them.
        #expect(
            try client.send(method: "POST", target: "/v0/b/alpha.appspot.com/o?name=a", body: bytes("a")).status == 200)
        #expect(
            try client.send(method: "POST", target: "/v0/b/beta.firebasestorage.app/o?name=b", body: bytes("b")).status
                == 200)
        let alpha = try bucketNames(client.get("/storage/v1/b?project=alpha"))
        #expect(alpha == ["alpha-data", "alpha.appspot.com"])
        let beta = try bucketNames(client.get("/storage/v1/b?project=beta"))
        #expect(beta == ["beta-data", "beta.firebasestorage.app"])
        // The XML API's listing names the project in a header.
        let xml = try client.send(method: "GET", target: "/", headers: ["x-goog-project-id": "beta"])
        #expect(xml.text.contains("<Name>beta-data</Name>") && !xml.text.contains("alpha"))
    }

    @Test("holds are absent until set, then shown with the value last set; isLocked only once locked")
    func booleanFieldPresence() throws {
        let created = try gcsUpload("held.txt", "x")
        #expect(created.status == 200)
        var o = try created.json()
        #expect(o["temporaryHold"] == nil && o["eventBasedHold"] == nil)
        o = try json("PATCH", gcs("held.txt"), #"{"temporaryHold":true}"#).json()
        #expect(o["temporaryHold"] == .bool(true) && o["eventBasedHold"] == nil)
        o = try json("PATCH", gcs("held.txt"), #"{"temporaryHold":false,"eventBasedHold":false}"#).json()

        #expect(o["temporaryHold"] == .bool(false) && o["eventBasedHold"] == .bool(false))
        o = try client.get(gcs("held.txt")).json()
        #expect(o["temporaryHold"] == .bool(false) && o["eventBasedHold"] == .bool(false))

        let made = try json(
            "POST", "/storage/v1/b?project=demo", #"{"name":"kept","retentionPolicy":{"retentionPeriod":"10"}}"#)
        #expect(made.status == 200, "\(made.text)")
        var b = try made.json()
        #expect(b["retentionPolicy"]?.objectValue?["isLocked"] == nil)
        // A bucket created without versioning has no `versioning`; every bucket has an IAM configuration.
        #expect(b["versioning"] == nil)
        #expect(
            b["iamConfiguration"]?.objectValue?["uniformBucketLevelAccess"]?.objectValue?["enabled"] == .bool(false))
        let metageneration = b["metageneration"]?.stringValue ?? ""
        let locked = try client.send(
            method: "POST", target: "/storage/v1/b/kept/lockRetentionPolicy?ifMetagenerationMatch=\(metageneration)")
        #expect(locked.status == 200, "\(locked.text)")
        #expect(try locked.json()["retentionPolicy"]?.objectValue?["isLocked"] == .bool(true))
        b = try json("PATCH", "/storage/v1/b/kept", #"{"versioning":{"enabled":false}}"#).json()
        #expect(b["versioning"] == .object(["enabled": .bool(false)]))
    }

    @Test("customTime only moves forward: an earlier one or its removal is a 400, on PATCH, PUT and v0 updates")
    func customTimeMovesForward() throws {
        #expect(try gcsUpload("t.txt", "x").status == 200)
        #expect(try json("PATCH", gcs("t.txt"), #"{"customTime":"2026-03-04T05:06:07Z"}"#).status == 200)
        let later = try json("PATCH", gcs("t.txt"), #"{"customTime":"2026-05-01T00:00:00Z"}"#)
        #expect(try later.status == 200 && later.string("customTime") == "2026-05-01T00:00:00.000Z")
        #expect(try json("PATCH", gcs("t.txt"), #"{"customTime":"2026-05-01T00:00:00Z"}"#).status == 200)
        for (method, body) in [
            ("PATCH", #"{"customTime":"2026-04-01T00:00:00Z"}"#), ("PATCH", #"{"customTime":null}"#),
            ("PUT", #"{"contentType":"text/plain"}"#), ("PUT", #"{"customTime":"2025-01-01T00:00:00Z"}"#),
        ] {
            let refused = try json(method, gcs("t.txt"), body)
            #expect(refused.status == 400, "\(method) \(body): \(refused.text)")
            #expect(
                try refused.json()["error"]?.objectValue?["errors"]?.arrayValue?.first?.objectValue?["reason"]?
                    .stringValue == "invalid")
        }
        let v0 = try json("PATCH", objectPath("t.txt"), #"{"customTime":"2026-01-01T00:00:00Z"}"#)
        #expect(v0.status == 400, "\(v0.text)")
        #expect(try client.get(gcs("t.txt")).string("customTime") == "2026-05-01T00:00:00.000Z")
        // A new upload is a new object: it may have any customTime.
        let fresh = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=multipart",
            headers: ["Content-Type": "multipart/related; boundary=b"],
            body: bytes(
                "--b\r\nContent-Type: application/json\r\n\r\n{\"name\":\"t.txt\",\"customTime\":\"2020-01-01T00:00:00Z\"}"
                    + "\r\n--b\r\nContent-Type: text/plain\r\n\r\ny\r\n--b--"))
        #expect(try fresh.status == 200 && fresh.string("customTime") == "2020-01-01T00:00:00.000Z", "\(fresh.text)")
    }

    @Test("with a soft-delete policy an overwrite soft-deletes the version it replaces, and so does a restore over it")
    func softDeleteOfReplacedVersions() throws {
        let made = try json(
            "POST", "/storage/v1/b?project=demo",
            #"{"name":"soft","softDeletePolicy":{"retentionDurationSeconds":"604800"}}"#)
        #expect(made.status == 200, "\(made.text)")
        func generation(_ r: TestResponse) throws -> String { try #require(try r.string("generation")) }
        func softDeleted() throws -> [String] {
            try client.get("/storage/v1/b/soft/o?softDeleted=true").json()["items"]?.arrayValue?.compactMap {
                $0.objectValue?["generation"]?.stringValue
            } ?? []
        }
        let first = try generation(gcsUpload("a.txt", "one", bucket: "soft"))
        let second = try generation(gcsUpload("a.txt", "two", bucket: "soft"))
        #expect(try softDeleted() == [first])
        // Restoring over the live version: that version is soft-deleted in turn, and can itself be restored.
        let unless = try client.send(
            method: "POST", target: gcs("a.txt", bucket: "soft") + "/restore?generation=\(first)&ifGenerationMatch=0")
        #expect(unless.status == 412)
        let restored = try client.send(
            method: "POST", target: gcs("a.txt", bucket: "soft") + "/restore?generation=\(first)")
        #expect(restored.status == 200, "\(restored.text)")
        #expect(try client.get(gcs("a.txt", bucket: "soft") + "?alt=media").text == "one")
        #expect(try softDeleted() == [second])
        let back = try client.send(
            method: "POST", target: gcs("a.txt", bucket: "soft") + "/restore?generation=\(second)")
        #expect(back.status == 200, "\(back.text)")
        #expect(try client.get(gcs("a.txt", bucket: "soft") + "?alt=media").text == "two")
        #expect(try softDeleted().count == 1)
    }

    @Test("emulator mode: GCS JSON and XML uploads to a bucket that does not exist create it")
    func emulatorCreatesBucketsOnEveryAPI() throws {
        #expect(try client.get("/storage/v1/b/fresh-json").status == 404)
        let media = try gcsUpload("m.txt", "m", bucket: "fresh-json")
        #expect(media.status == 200, "\(media.text)")
        #expect(try client.get("/storage/v1/b/fresh-json").status == 200)

        let start = try client.send(
            method: "POST", target: "/upload/storage/v1/b/fresh-resumable/o?uploadType=resumable&name=r.txt",
            headers: ["Content-Type": "application/json"], body: bytes("{}"))
        #expect(start.status == 200, "\(start.text)")
        let location = try #require(start.headers["Location"])
        let path = String(location.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
        let finished = try client.send(method: "PUT", target: path, body: bytes("resumed"))
        #expect(finished.status == 200, "\(finished.text)")
        #expect(try client.get(gcs("r.txt", bucket: "fresh-resumable") + "?alt=media").text == "resumed")

        let xml = try client.send(method: "PUT", target: "/fresh-xml/x.txt", body: bytes("x"))
        #expect(xml.status == 200, "\(xml.text)")
        #expect(try client.get("/fresh-xml/x.txt").text == "x")
    }

    @Test("secured mode: a GCS upload to a bucket that does not exist stays a 404, and creates nothing")
    func securedModeKeepsBuckets() throws {
        var configuration = ServerConfiguration()
        configuration.createBucketsOnUpload = false
        let secured = try TestServer(configuration: configuration)
        let client = secured.client()
        let media = try client.send(
            method: "POST", target: "/upload/storage/v1/b/nowhere/o?uploadType=media&name=m", body: bytes("m"))
        #expect(media.status == 404)
        #expect(try client.send(method: "PUT", target: "/nowhere/x", body: bytes("x")).status == 404)
        #expect(try client.get("/storage/v1/b/nowhere").status == 404)
    }
}
