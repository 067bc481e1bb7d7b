import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// Metadata that reaches download headers is refused with 400 when it carries CR, LF, NUL or another
/// control character, on every write path; and no stored value can split a download response.
@Suite struct HeaderInjectionTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
    }

    static let fields = ["contentType", "contentDisposition", "cacheControl", "contentLanguage", "contentEncoding"]
    static let poison = ["text/html\r\nX-Injected: yes", "a\nX-Injected: yes", "a\rb", "a\u{0}b", "a\u{7F}b"]

    static func json(_ field: String, _ value: String) -> [UInt8] {
        JSONValue.object([field: .string(value)]).serialized()
    }

    @Test("v0 PATCH refuses control characters in every header-bound field", arguments: fields)
    func v0Patch(field: String) throws {
        try client.mediaUpload("h.txt", bytes("hello"), contentType: "text/plain")
        for value in Self.poison {
            let r = try client.send(
                method: "PATCH", target: objectPath("h.txt"), headers: ["Content-Type": "application/json"],
                body: Self.json(field, value))
            #expect(r.status == 400, "\(field) = \(value.debugDescription)")
            #expect(r.errorCode == 400)
        }
        let download = try client.get(objectPath("h.txt") + "?alt=media")
        #expect(download.headers["X-Injected"] == nil)
        #expect(download.headers["Content-Type"] == "text/plain")
    }

    @Test("GCS PATCH and PUT refuse them", arguments: fields)
    func gcsPatch(field: String) throws {
        try client.mediaUpload("g.txt", bytes("hello"))
        for method in ["PATCH", "PUT"] {
            let r = try client.send(
                method: method, target: "/storage/v1/b/\(bucket)/o/g.txt",
                headers: ["Content-Type": "application/json"],
                body: Self.json(field, Self.poison[0]))
            #expect(r.status == 400, "\(method) \(field)")
        }
    }

    @Test("v0 multipart, resumable start and GCS multipart metadata refuse them")
    func uploadMetadata() throws {
        _ = try server.metadata.ensureBucket(try BucketName(bucket))
        let metadata = String(decoding: Self.json("contentType", Self.poison[0]), as: UTF8.self)
        #expect(try client.multipartUpload("mp.txt", metadata: metadata, bytes("x")).status == 400)
        let start = try client.send(
            method: "POST", target: bucketPath() + "?name=rs.txt",
            headers: ["X-Goog-Upload-Command": "start", "X-Goog-Upload-Protocol": "resumable"],
            body: Self.json("cacheControl", "no-cache\r\nSet-Cookie: a=b"))
        #expect(start.status == 400)
        let boundary = "BOUND"
        let body = bytes(
            "--\(boundary)\r\nContent-Type: application/json\r\n\r\n\(metadata)\r\n--\(boundary)\r\n"
                + "Content-Type: text/plain\r\n\r\nx\r\n--\(boundary)--\r\n")
        let gcs = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=multipart&name=gm.txt",
            headers: ["Content-Type": "multipart/related; boundary=\(boundary)"], body: body)
        #expect(gcs.status == 400)
        for name in ["mp.txt", "rs.txt", "gm.txt"] { #expect(try client.get(objectPath(name)).status == 404) }
    }

    @Test("custom metadata keys with control characters are refused")
    func customKeys() throws {
        try client.mediaUpload("k.txt", bytes("x"))
        let body = bytes(#"{"metadata":{"a\r\nb":"v"}}"#)
        let r = try client.send(
            method: "PATCH", target: objectPath("k.txt"), headers: ["Content-Type": "application/json"], body: body)
        #expect(r.status == 400)
    }

    @Test("a stored value with CR LF never splits a download: the transport drops the field")
    func secondWall() throws {
        try client.mediaUpload("wall.txt", bytes("body"), contentType: "text/plain")
        // Written behind the API's back, as data from an older version or a broken import could be.
        _ = try server.metadata.updateObject(
            try BucketName(bucket), try ObjectName("wall.txt"), conditions: .none, at: Timestamp.now()
        ) { fields in
            fields.cacheControl = "no-cache\r\nX-Injected: yes\r\n\r\nHTTP/1.1 200 OK"
            // DEL rather than NUL: PostgreSQL cannot store a NUL in text at all (the API refuses both).
            fields.contentLanguage = "en\u{7F}"
        }
        let keepAlive = server.client()
        for _ in 0..<2 {
            let r = try keepAlive.get(objectPath("wall.txt") + "?alt=media")
            #expect(r.status == 200)
            #expect(r.text == "body")
            #expect(r.headers["X-Injected"] == nil)
            #expect(r.headers["Cache-Control"] == nil)
            #expect(r.headers["Content-Language"] == nil)
        }
        // The same connection is still in step: one more ordinary request gets its own answer.
        #expect(try keepAlive.get("/").status == 200)
    }

    @Test("custom metadata is limited to 8 KiB in total, also when merged over several PATCHes")
    func customMetadataLimit() throws {
        try client.mediaUpload("m.txt", bytes("x"))
        func patch(_ metadata: [String: String]) throws -> Int {
            var custom = JSONObject()
            for (key, value) in metadata { custom[key] = .string(value) }
            return try client.send(
                method: "PATCH", target: objectPath("m.txt"), headers: ["Content-Type": "application/json"],
                body: JSONValue.object(["metadata": .object(custom)]).serialized()
            ).status
        }
        let tokenBytes = try #require(
            try server.metadata.object(try BucketName(bucket), try ObjectName("m.txt"), generation: nil)
        ).fields.customMetadataBytes
        let half = (ObjectFields.maxCustomMetadataBytes - tokenBytes) / 2
        #expect(try patch(["a": String(repeating: "v", count: half - 1)]) == 200)
        #expect(try patch(["b": String(repeating: "v", count: half - 1)]) == 200)
        // One byte over in total, though this PATCH alone is tiny.
        #expect(try patch(["cc": String(repeating: "v", count: 1)]) == 400)
        #expect(try patch(["big": String(repeating: "v", count: 9000)]) == 400)
        let stored = try #require(
            try server.metadata.object(try BucketName(bucket), try ObjectName("m.txt"), generation: nil))
        #expect(stored.fields.customMetadata["cc"] == nil)
        #expect(stored.fields.customMetadataBytes <= ObjectFields.maxCustomMetadataBytes)
    }
}
