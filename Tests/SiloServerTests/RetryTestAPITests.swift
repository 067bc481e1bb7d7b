import SiloCore
import SiloHTTP
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// storage-testbench's Retry Test API behind `--test-faults` (FaultInjectingHandler), each instruction on a live
/// socket: what the client sees on the wire, and that the test records the instruction as consumed.
@Suite struct RetryTestAPITests {
    static let bucket = "faults-bucket"

    /// A server with the fault handler in front of the app, and the test bucket.
    static func server(threads: Int = 4) throws -> TestServer {
        let server = try TestServer(testFaults: true, threads: threads)
        let made = try server.client().send(
            method: "POST", target: "/storage/v1/b?project=p", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"name":"\#(bucket)"}"#))
        #expect(made.status == 200)
        return server
    }

    /// Creates a retry test; returns its id.
    static func create(_ client: HTTPTestClient, _ instructions: String) throws -> String {
        let response = try client.send(
            method: "POST", target: "/retry_test", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"instructions": \#(instructions), "transport": "HTTP"}"#))
        #expect(response.status == 200, "\(response.text)")
        return try #require(try JSONValue.parse(response.body).objectValue?["id"]?.stringValue)
    }

    static func state(_ client: HTTPTestClient, _ id: String) throws -> JSONObject {
        let response = try client.send(method: "GET", target: "/retry_test/\(id)")
        #expect(response.status == 200)
        return try #require(try JSONValue.parse(response.body).objectValue)
    }

    static func upload(_ client: HTTPTestClient, _ name: String, _ body: [UInt8], headers: HTTPHeaders = [:]) throws
        -> TestResponse
    {
        try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=\(name)", headers: headers,
            body: body)
    }

    static func mediaPath(_ name: String) -> String { "/storage/v1/b/\(bucket)/o/\(name)?alt=media" }

    // MARK: - The API

    @Test func createShowListAndDeleteAsTheTestbenchDoes() throws {
        let server = try Self.server()
        let client = server.client()
        let id = try Self.create(client, #"{"storage.objects.get": ["return-503", "return-reset-connection"]}"#)
        #expect(id.utf8.count == 32)
        let shown = try Self.state(client, id)
        #expect(shown["completed"] == .bool(false))
        #expect(shown["transport"] == .string("HTTP"))
        #expect(
            shown["instructions"]?.objectValue?["storage.objects.get"]
                == .array([.string("return-503"), .string("return-reset-connection")]))
        let listed = try JSONValue.parse(try client.send(method: "GET", target: "/retry_tests").body)
        #expect(listed.objectValue?["retry_test"]?.arrayValue?.compactMap { $0.objectValue?["id"] } == [.string(id)])
        #expect(try client.send(method: "DELETE", target: "/retry_test/\(id)").status == 200)
        #expect(try client.send(method: "GET", target: "/retry_test/\(id)").status == 404)
    }

    @Test(arguments: [
        #"{"instructions": {"storage.objects.get": ["return-teapot"]}}"#,
        #"{"instructions": {"storage.objects.get": ["return-200"]}}"#,
        #"{"instructions": {"storage.objects.get": ["stall-for-9999s-after-1K"]}}"#,
        #"{"instructions": {"storage.objects.frobnicate": ["return-503"]}}"#,
        #"{"instructions": {"storage.objects.get": ["return-503-after-256K"]}}"#,
        #"{"instructions": {"storage.objects.get": "return-503"}}"#,
        #"{"instructions": {"storage.objects.get": ["return-503"]}, "transport": "GRPC"}"#,
        #"{"instructions": {}}"#,
        #"not json"#,
    ])
    func refusesWhatItCannotStage(_ body: String) throws {
        let server = try Self.server()
        let response = try server.client().send(method: "POST", target: "/retry_test", body: bytes(body))
        #expect(response.status == 400, "\(response.text)")
    }

    @Test func anUnknownTestIDIsAnError() throws {
        let server = try Self.server()
        let response = try server.client().send(
            method: "GET", target: "/storage/v1/b?project=p",
            headers: ["x-retry-test-id": "0123456789abcdef0123456789abcdef"])
        #expect(response.status == 404)
    }

    // MARK: - Instructions answered before the request is handled

    @Test func returnStatusFailsTheOperationsOwnRequestsInTurn() throws {
        let server = try Self.server()
        let client = server.client()
        #expect(try Self.upload(client, "a", bytes("hello")).status == 200)
        let id = try Self.create(client, #"{"storage.objects.get": ["return-503", "return-400"]}"#)
        let headers: HTTPHeaders = ["x-retry-test-id": id]
        // Another operation with the same id is not touched.
        #expect(
            try client.send(method: "GET", target: "/storage/v1/b/\(Self.bucket)/o", headers: headers).status == 200)
        let first = try client.send(method: "GET", target: Self.mediaPath("a"), headers: headers)
        #expect(first.status == 503)
        #expect(
            try JSONValue.parse(first.body).objectValue?["error"]?.objectValue?["message"]
                == .string("Retry Test: Caused a 503"))
        #expect(try client.send(method: "GET", target: Self.mediaPath("a"), headers: headers).status == 400)
        #expect(try Self.state(client, id)["completed"] == .bool(true))
        let after = try client.send(method: "GET", target: Self.mediaPath("a"), headers: headers)
        #expect(after.status == 200)
        #expect(after.text == "hello")
    }

    /// Each route answers to its JSON API operation id: an instruction for that name fails exactly that request.
    @Test(arguments: [
        ("GET", "/storage/v1/b?project=p", "storage.buckets.list"),
        ("POST", "/storage/v1/b?project=p", "storage.buckets.insert"),
        ("GET", "/storage/v1/b/faults-bucket", "storage.buckets.get"),
        ("PATCH", "/storage/v1/b/faults-bucket", "storage.buckets.patch"),
        ("PUT", "/storage/v1/b/faults-bucket", "storage.buckets.update"),
        ("DELETE", "/storage/v1/b/faults-bucket", "storage.buckets.delete"),
        ("GET", "/storage/v1/b/faults-bucket/iam", "storage.buckets.getIamPolicy"),
        ("PUT", "/storage/v1/b/faults-bucket/iam", "storage.buckets.setIamPolicy"),
        ("GET", "/storage/v1/b/faults-bucket/iam/testPermissions", "storage.buckets.testIamPermissions"),
        ("POST", "/storage/v1/b/faults-bucket/lockRetentionPolicy", "storage.buckets.lockRetentionPolicy"),
        ("GET", "/storage/v1/b/faults-bucket/acl", "storage.bucket_acl.list"),
        ("PATCH", "/storage/v1/b/faults-bucket/acl/allUsers", "storage.bucket_acl.patch"),
        ("GET", "/storage/v1/b/faults-bucket/defaultObjectAcl", "storage.default_object_acl.list"),
        ("POST", "/storage/v1/b/faults-bucket/notificationConfigs", "storage.notifications.insert"),
        ("GET", "/storage/v1/b/faults-bucket/o", "storage.objects.list"),
        ("GET", "/storage/v1/b/faults-bucket/o/a", "storage.objects.get"),
        ("GET", "/download/storage/v1/b/faults-bucket/o/a?alt=media", "storage.objects.get"),
        ("PATCH", "/storage/v1/b/faults-bucket/o/a", "storage.objects.patch"),
        ("PUT", "/storage/v1/b/faults-bucket/o/a", "storage.objects.update"),
        ("DELETE", "/storage/v1/b/faults-bucket/o/a", "storage.objects.delete"),
        ("POST", "/upload/storage/v1/b/faults-bucket/o?uploadType=media&name=b", "storage.objects.insert"),
        ("POST", "/storage/v1/b/faults-bucket/o/a/compose", "storage.objects.compose"),
        ("POST", "/storage/v1/b/faults-bucket/o/a/copyTo/b/faults-bucket/o/b", "storage.objects.copy"),
        ("POST", "/storage/v1/b/faults-bucket/o/a/rewriteTo/b/faults-bucket/o/b", "storage.objects.rewrite"),
        ("GET", "/storage/v1/b/faults-bucket/o/a/acl/allUsers", "storage.object_acl.get"),
        ("GET", "/storage/v1/projects/p/serviceAccount", "storage.serviceaccount.get"),
        ("POST", "/storage/v1/projects/p/hmacKeys?serviceAccountEmail=x", "storage.hmacKey.create"),
        ("GET", "/faults-bucket/a", "storage.objects.get"),
        ("PUT", "/faults-bucket/a", "storage.objects.insert"),
    ])
    func operationNames(_ method: String, _ target: String, _ operation: String) throws {
        let server = try Self.server()
        let client = server.client()
        let id = try Self.create(client, #"{"\#(operation)": ["return-599"]}"#)
        let response = try client.send(method: method, target: target, headers: ["x-retry-test-id": id])
        #expect(response.status == 599, "\(method) \(target): \(response.status) \(response.text)")
        #expect(try Self.state(client, id)["completed"] == .bool(true))
    }

    /// Routed as the application routes it: a virtual-host XML read is `storage.objects.get`.
    @Test func virtualHostRequestsAreNamedAsTheAppRoutesThem() throws {
        let server = try Self.server()
        let client = server.client()
        let id = try Self.create(client, #"{"storage.objects.get": ["return-599"]}"#)
        let response = try client.send(
            method: "GET", target: "/a", headers: ["Host": "\(Self.bucket).localhost", "x-retry-test-id": id])
        #expect(response.status == 599)
    }

    @Test func resetConnectionSendsNothingAndResets() throws {
        let server = try Self.server()
        let client = server.client()
        let id = try Self.create(client, #"{"storage.buckets.list": ["return-reset-connection"]}"#)
        let wire = try RawConnection(port: server.port)
        try wire.send("GET /storage/v1/b?project=p HTTP/1.1\r\nHost: x\r\nx-retry-test-id: \(id)\r\n\r\n")
        let (received, end) = wire.readToEnd()
        #expect(received.isEmpty)
        #expect(end == .reset)
        #expect(try Self.state(client, id)["completed"] == .bool(true))
        #expect(try server.client().send(method: "GET", target: "/storage/v1/b?project=p").status == 200)
    }

    @Test func resetConnectionComesBeforeAnUploadsBodyIsRead() throws {
        let server = try Self.server()
        let client = server.client()
        let id = try Self.create(client, #"{"storage.objects.insert": ["return-reset-connection"]}"#)
        let wire = try RawConnection(port: server.port)
        try wire.send(
            "POST /upload/storage/v1/b/\(Self.bucket)/o?uploadType=media&name=r HTTP/1.1\r\nHost: x\r\n"
                + "Content-Length: 1000000\r\nx-retry-test-id: \(id)\r\n\r\n")
        let (received, end) = wire.readToEnd()
        #expect(received.isEmpty)
        #expect(end == .reset)
        #expect(try client.send(method: "GET", target: "/storage/v1/b/\(Self.bucket)/o/r").status == 404)
    }

    // MARK: - Instructions the transport stages in the answer

    @Test(arguments: [("return-broken-stream", 4), ("return-broken-stream-after-2K", 2048)])
    func brokenStreamCutsTheBodyAfterItsBytes(instruction: String, sent: Int) throws {
        let server = try Self.server()
        let client = server.client()
        let object = pattern(10_000)
        #expect(try Self.upload(client, "big", object).status == 200)
        let id = try Self.create(client, #"{"storage.objects.get": ["\#(instruction)"]}"#)
        let wire = try RawConnection(port: server.port)
        try wire.send("GET \(Self.mediaPath("big")) HTTP/1.1\r\nHost: x\r\nx-retry-test-id: \(id)\r\n\r\n")
        let (received, _) = wire.readToEnd()
        let (head, body) = try #require(RawConnection.split(received))
        #expect(head.hasPrefix("HTTP/1.1 200"))
        #expect(head.lowercased().contains("content-length: 10000"))
        #expect(body == Array(object[0..<sent]))
        #expect(try Self.state(client, id)["completed"] == .bool(true))
        // The object itself is intact: the next read gets all of it.
        #expect(
            try client.send(method: "GET", target: Self.mediaPath("big"), headers: ["x-retry-test-id": id]).body
                == object)
    }

    /// The stall holds one connection's answer on a single event loop while that loop serves another connection
    /// in full; then the rest of the answer arrives. Order is checked, not durations.
    @Test func stallHoldsTheAnswerWithoutHoldingTheLoop() throws {
        let server = try Self.server(threads: 1)
        let client = server.client()
        let object = pattern(8192)
        #expect(try Self.upload(client, "s", object).status == 200)
        let id = try Self.create(client, #"{"storage.objects.get": ["stall-for-3s-after-1K"]}"#)
        let wire = try RawConnection(port: server.port)
        try wire.send("GET \(Self.mediaPath("s")) HTTP/1.1\r\nHost: x\r\nx-retry-test-id: \(id)\r\n\r\n")
        let received1 = try wire.read(until: { RawConnection.split($0).map { $0.body.count >= 1024 } ?? false })
        var received = received1
        #expect(RawConnection.split(received)?.body.count == 1024)
        // Meanwhile the only loop answers another connection completely.
        let other = server.client()
        #expect(try other.send(method: "GET", target: Self.mediaPath("s")).body == object)
        #expect(wire.available() == 0, "the stalled answer went on before the other connection was served")
        let soFar = received
        received =
            soFar + (try wire.read(until: { RawConnection.split(soFar + $0).map { $0.body.count >= 8192 } ?? false }))
        #expect(RawConnection.split(received)?.body == object)
    }

    // MARK: - Upload faults

    @Test func returnStatusAfterBytesOnAResumableChunkKeepsWhatCameBefore() throws {
        let server = try Self.server()
        let client = server.client()
        let object = pattern(1 << 20)
        let id = try Self.create(client, #"{"storage.objects.insert": ["return-503-after-256K"]}"#)
        let faulted: HTTPHeaders = ["x-retry-test-id": id]
        let start = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=resumable&name=r",
            headers: faulted)
        #expect(start.status == 200)
        let location = try #require(start.headers["Location"])
        let session = String(location[location.firstRange(of: "/upload/")!.lowerBound...])
        // The session start carries no object bytes: the instruction is still pending.
        #expect(try Self.state(client, id)["completed"] == .bool(false))
        let chunk = try client.send(
            method: "PUT", target: session,
            headers: ["x-retry-test-id": id, "Content-Range": "bytes 0-524287/\(object.count)"],
            body: Array(object[0..<524_288]))
        #expect(chunk.status == 503)
        #expect(try Self.state(client, id)["completed"] == .bool(true))
        let status = try client.send(
            method: "PUT", target: session,
            headers: ["x-retry-test-id": id, "Content-Range": "bytes */\(object.count)"])
        #expect(status.status == 308)
        #expect(status.headers["Range"] == "bytes=0-262143")
        // google-cloud-storage retries the same chunk: GCS ignores the bytes it already has and takes the rest.
        let again = try client.send(
            method: "PUT", target: session,
            headers: ["x-retry-test-id": id, "Content-Range": "bytes 0-524287/\(object.count)"],
            body: Array(object[0..<524_288]))
        #expect(again.status == 308)
        #expect(again.headers["Range"] == "bytes=0-524287")
        let rest = try client.send(
            method: "PUT", target: session,
            headers: ["x-retry-test-id": id, "Content-Range": "bytes 524288-\(object.count - 1)/\(object.count)"],
            body: Array(object[524_288...]))
        #expect(rest.status == 200)
        #expect(try client.send(method: "GET", target: Self.mediaPath("r")).body == object)
    }

    @Test func returnStatusAfterBytesOnASingleShotUploadStoresNothing() throws {
        let server = try Self.server()
        let client = server.client()
        let id = try Self.create(client, #"{"storage.objects.insert": ["return-503-after-2K"]}"#)
        let headers: HTTPHeaders = ["x-retry-test-id": id]
        // A body that does not reach the point goes through and leaves the instruction pending, as in the testbench.
        #expect(try Self.upload(client, "small", pattern(1000), headers: headers).status == 200)
        #expect(try Self.state(client, id)["completed"] == .bool(false))
        #expect(try Self.upload(client, "large", pattern(5000), headers: headers).status == 503)
        #expect(try Self.state(client, id)["completed"] == .bool(true))
        #expect(try client.send(method: "GET", target: "/storage/v1/b/\(Self.bucket)/o/large").status == 404)
        #expect(try Self.upload(client, "large", pattern(5000), headers: headers).status == 200)
    }

    @Test func brokenFinalChunkCommitsTheObjectAndCutsTheAnswer() throws {
        let server = try Self.server()
        let client = server.client()
        let object = pattern(3000)
        let id = try Self.create(client, #"{"storage.objects.insert": ["return-broken-stream-final-chunk-after-10B"]}"#)
        let start = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=resumable&name=f",
            headers: ["x-retry-test-id": id])
        let location = try #require(start.headers["Location"])
        let session = String(location[location.firstRange(of: "/upload/")!.lowerBound...])
        let wire = try RawConnection(port: server.port)
        try wire.send(
            "PUT \(session) HTTP/1.1\r\nHost: x\r\nx-retry-test-id: \(id)\r\nContent-Length: 3000\r\n"
                + "Content-Range: bytes 0-2999/3000\r\n\r\n")
        try wire.send(object)
        let (received, _) = wire.readToEnd()
        let (head, body) = try #require(RawConnection.split(received))
        #expect(head.hasPrefix("HTTP/1.1 200"))
        #expect(body.count == 10)
        #expect(try Self.state(client, id)["completed"] == .bool(true))
        // The client's recovery: the session now answers with the committed object.
        let status = try client.send(method: "PUT", target: session, headers: ["Content-Range": "bytes */3000"])
        #expect(status.status == 200)
        #expect(try client.send(method: "GET", target: Self.mediaPath("f")).body == object)
    }

    @Test func stallOnAnUploadDelaysItsAnswerOnce() throws {
        let server = try Self.server()
        let client = server.client()
        let id = try Self.create(client, #"{"storage.objects.insert": ["stall-for-1s-after-1K"]}"#)
        let headers: HTTPHeaders = ["x-retry-test-id": id]
        #expect(try Self.upload(client, "under", pattern(500), headers: headers).status == 200)
        #expect(try Self.state(client, id)["completed"] == .bool(false))
        #expect(try Self.upload(client, "over", pattern(4000), headers: headers).status == 200)
        #expect(try Self.state(client, id)["completed"] == .bool(true))
        #expect(try client.send(method: "GET", target: Self.mediaPath("over")).body == pattern(4000))
    }

    @Test func withoutTheHandlerTheAPIIsNotThere() throws {
        let server = try TestServer()
        let response = try server.client().send(method: "POST", target: "/retry_test", body: bytes("{}"))
        #expect(response.status != 200)
        #expect(!response.text.contains("instructions"))
    }
}

/// A client socket that reports how the server ended the connection: a reset versus an orderly close, which
/// HTTPTestClient does not tell apart.
final class RawConnection {
    enum End: Equatable { case closed, reset, timeout }

    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw StorageError(.ioError, "connect to 127.0.0.1:\(port) failed") }
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw StorageError(.ioError, "send failed") }
            offset += n
        }
    }

    /// Everything until the server closes, and how it closed.
    func readToEnd() -> ([UInt8], End) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received += buffer[0..<n]
                continue
            }
            if n == 0 { return (received, .closed) }
            return (received, errno == ECONNRESET ? .reset : .timeout)
        }
    }

    /// Reads until `done` holds for what arrived (or the server closes, or 10 s pass without a byte).
    func read(until done: ([UInt8]) -> Bool) throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !done(received) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw StorageError(.ioError, "connection ended after \(received.count) bytes") }
            received += buffer[0..<n]
        }
        return received
    }

    /// Bytes that have arrived and are not read yet.
    func available() -> Int {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        return max(0, n)
    }

    /// The head (as text) and the body bytes after it, once the head is complete.
    static func split(_ bytes: [UInt8]) -> (head: String, body: [UInt8])? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where Array(bytes[index..<(index + 4)]) == separator {
            return (String(decoding: bytes[0..<index], as: UTF8.self), Array(bytes[(index + 4)...]))
        }
        return nil
    }
}
