import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Synchronization
import Testing

/// Through a real socket: input that can mean two things is refused, Range numbers too large for
/// 64 bits behave like any other number past the end, and a server-side failure is logged with its cause while
/// the client gets a generic answer with a request id.
@Suite struct AmbiguousInputTests {
    let server: TestServer
    let client: HTTPTestClient
    let hooks = StoreCallHooks()
    let log = CapturingLogHandler()

    init() throws {
        server = try TestServer(hooks: hooks, logger: log.logger())
        client = server.client()
    }

    @Test(
        "a malformed escape or invalid UTF-8 in ?name= is a 400 and stores nothing",
        arguments: ["bad%ZZ", "bad%4", "bad%", "bad%FF", "bad%C0%AF", "bad%ED%A0%80", "bad%F4%90%80%80"])
    func malformedQueryName(name: String) throws {
        let r = try client.send(method: "POST", target: bucketPath() + "?name=" + name, body: bytes("x"))
        #expect(r.status == 400)
        let gcs = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=" + name, body: bytes("x"))
        #expect(gcs.status == 400)
        #expect(try server.metadata.listObjects(try BucketName(bucket), prefix: "", startAfter: nil, limit: 10).isEmpty)
    }

    @Test("raw bytes that are not UTF-8 in the request target are a 400; raw UTF-8 is served")
    func rawTargetBytes() throws {
        let raw = HTTPTestClient(port: server.port)
        try raw.sendRaw(
            Array("POST /v0/b/\(bucket)/o?name=a".utf8) + [0xFF, 0xFE]
                + Array(" HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx".utf8))
        #expect(try raw.readResponse().status == 400)
        let ok = HTTPTestClient(port: server.port)
        try ok.sendRaw(
            Array("POST /v0/b/\(bucket)/o?name=caf\u{E9} HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx".utf8))
        #expect(try ok.readResponse().status == 200)
        #expect(try client.get(objectPath("café")).status == 200)
    }

    @Test("two Authorization fields, two Host fields, or none on HTTP/1.1 are a 400")
    func ambiguousHeads() throws {
        func raw(_ head: String) throws -> Int {
            let c = HTTPTestClient(port: server.port)
            try c.sendRaw(Array(head.utf8))
            return try c.readResponse().status
        }
        #expect(
            try raw("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer owner\r\nAuthorization: Bearer x\r\n\r\n")
                == 400)
        #expect(try raw("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400)
        #expect(try raw("GET / HTTP/1.1\r\nConnection: close\r\n\r\n") == 400)
        #expect(try raw("GET / HTTP/1.0\r\n\r\n") == 200)
        #expect(try raw("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer owner\r\nConnection: close\r\n\r\n") == 200)
    }

    @Test("Range positions too large for 64 bits are past the end like any other")
    func overflowingRanges() throws {
        try client.mediaUpload("r.bin", bytes("0123456789"))
        let media = objectPath("r.bin") + "?alt=media"
        for header in ["bytes=99999999999999999999-", "bytes=999999999-"] {
            let r = try client.get(media, headers: ["Range": header])
            #expect(r.status == 416, "\(header)")
            #expect(r.headers["Content-Range"] == "bytes */10")
        }
        let whole = try client.get(media, headers: ["Range": "bytes=0-99999999999999999999"])
        #expect(whole.status == 206)
        #expect(whole.headers["Content-Range"] == "bytes 0-9/10")
        #expect(whole.text == "0123456789")
        let suffix = try client.get(media, headers: ["Range": "bytes=-99999999999999999999"])
        #expect(suffix.status == 206)
        #expect(suffix.text == "0123456789")
    }

    @Test("a store failure is a 500 with a request id; the cause is logged once under that id, never sent")
    func serverFailuresAreLoggedNotShown() throws {
        try client.mediaUpload("f.txt", bytes("x"))
        let secret = "disk /srv/silo/metadata.sqlite: SQLITE_IOERR_FSYNC at page 7"
        hooks.set { call, moment in
            if call.method == "updateObject" && moment == .before { throw StorageError(.ioError, secret) }
        }
        let r = try client.send(
            method: "PATCH", target: objectPath("f.txt"), headers: ["Content-Type": "application/json"],
            body: bytes(#"{"contentType":"text/csv"}"#))
        hooks.set(nil)
        #expect(r.status == 500)
        let id = try #require(r.headers["X-Request-Id"])
        #expect(!r.text.contains("sqlite") && !r.text.contains("/srv"))
        let message = try #require(try r.json()["error"]?.objectValue?["message"]?.stringValue)
        #expect(message.contains(id))
        let failures = log.logged.filter { $0.level == .error && $0.metadata["silo.request_id"] == id }
        #expect(failures.count == 1)
        #expect(failures.first?.metadata["silo.error"]?.contains(secret) == true)
        #expect(failures.first?.metadata["silo.http.status"] == "500")
        // The same on the GCS API, in its shape.
        hooks.set { call, moment in
            if call.method == "object" && moment == .before { throw StorageError(.corrupt, secret) }
        }
        let gcs = try client.get("/storage/v1/b/\(bucket)/o/f.txt")
        hooks.set(nil)
        #expect(gcs.status == 500)
        #expect(!gcs.text.contains("/srv"))
        #expect(gcs.headers["X-Request-Id"] != nil)
    }

    @Test("a full disk is a 507, not a 503 or a 500")
    func fullDiskIs507() throws {
        hooks.set { call, moment in
            if call.method == "write" && moment == .before {
                throw StorageError(.insufficientStorage, "pwrite: No space left on device")
            }
        }
        let r = try client.mediaUpload("full.bin", pattern(300 << 10))
        hooks.set(nil)
        #expect(r.status == 507)
        #expect(try client.mediaUpload("full.bin", bytes("fits")).status == 200)
    }
}

/// Findings of the schemathesis run (tests/schemathesis/FINDINGS.md).
@Suite struct SchemaFindingTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
    }

    @Test("copyTo, rewriteTo and compose write only on POST", arguments: ["GET", "PUT", "DELETE", "PATCH"])
    func copyIsPostOnly(method: String) throws {
        try client.mediaUpload("src.txt", bytes("source"))
        for path in [
            "/storage/v1/b/\(bucket)/o/src.txt/copyTo/b/\(bucket)/o/copy.txt",
            "/storage/v1/b/\(bucket)/o/src.txt/rewriteTo/b/\(bucket)/o/copy.txt",
            "/storage/v1/b/\(bucket)/o/copy.txt/compose",
        ] {
            #expect(try client.send(method: method, target: path).status == 400, "\(method) \(path)")
        }
        #expect(try client.get(objectPath("copy.txt")).status == 404)
    }

    @Test("a bucket's versioning must be an object or null")
    func bucketVersioningShape() throws {
        try client.mediaUpload("x", bytes("x"))
        for body in [#"{"versioning":"AAA"}"#, #"{"versioning":false}"#, #"{"versioning":[]}"#] {
            let r = try client.send(
                method: "PATCH", target: "/storage/v1/b/\(bucket)", headers: ["Content-Type": "application/json"],
                body: bytes(body))
            #expect(r.status == 400, "\(body)")
        }
        let on = try client.send(
            method: "PATCH", target: "/storage/v1/b/\(bucket)", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"versioning":{"enabled":true}}"#))
        #expect(try on.json()["versioning"]?.objectValue?["enabled"] == .bool(true))
        let cleared = try client.send(
            method: "PATCH", target: "/storage/v1/b/\(bucket)", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"versioning":null}"#))
        #expect(cleared.status == 200)
        #expect(try cleared.json()["versioning"]?.objectValue?["enabled"] != .bool(true))
    }
}
