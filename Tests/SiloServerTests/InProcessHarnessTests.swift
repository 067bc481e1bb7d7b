import SiloCore
import SiloHTTP
import SiloTestStores
import SiloTesting
import Testing

/// One table of v0 route cases run on a live socket and in process (``TestServer/Transport``): the same answers
/// both ways is what lets route tests move to the in-process harness, and the live-socket run is the reference.
@Suite struct InProcessHarnessTests {
    /// What one step sends and what must come back.
    struct Step: Sendable {
        var method: String
        var target: String
        var headers: HTTPHeaders = [:]
        var body: [UInt8] = []
        var bodyMode: HTTPTestClient.BodyMode = .contentLength
        var status: Int
        /// The body that must come back, when the case fixes it.
        var expectedBody: [UInt8]? = nil
    }

    static let big = pattern(200_000, seed: 7)

    /// Uploads (small, several pieces of body, chunked), reads (metadata, media, a range, HEAD), refusals, a delete.
    static let steps: [Step] = [
        Step(method: "POST", target: bucketPath() + "?name=public%2Fa.txt", body: bytes("hello world"), status: 200),
        Step(
            method: "GET", target: objectPath("public/a.txt") + "?alt=media", status: 200,
            expectedBody: bytes("hello world")),
        Step(
            method: "GET", target: objectPath("public/a.txt") + "?alt=media", headers: ["Range": "bytes=6-"],
            status: 206, expectedBody: bytes("world")),
        Step(method: "HEAD", target: objectPath("public/a.txt") + "?alt=media", status: 200, expectedBody: []),
        Step(method: "POST", target: bucketPath() + "?name=public%2Fbig", body: big, status: 200),
        Step(method: "GET", target: objectPath("public/big") + "?alt=media", status: 200, expectedBody: big),
        Step(
            method: "POST", target: bucketPath() + "?name=public%2Fchunked", body: big,
            bodyMode: .chunked(pieceSize: 10_000), status: 200),
        Step(method: "GET", target: objectPath("public/chunked") + "?alt=media", status: 200, expectedBody: big),
        Step(method: "GET", target: objectPath("public/missing"), status: 404),
        Step(method: "GET", target: objectPath("testing/secret"), status: 403),
        Step(method: "POST", target: bucketPath() + "?name=testing%2Fx", body: bytes("no"), status: 403),
        Step(method: "DELETE", target: objectPath("public/a.txt"), status: 204),
        Step(method: "GET", target: objectPath("public/a.txt"), status: 404),
    ]

    /// The table's answers on one transport.
    static func run(_ transport: TestServer.Transport) throws -> [TestResponse] {
        let server = try TestServer(transport, backend: .memory, policy: VectorPolicy())
        let client = server.client()
        return try steps.map {
            try client.send(
                method: $0.method, target: $0.target, headers: $0.headers, body: $0.body, bodyMode: $0.bodyMode)
        }
    }

    @Test("every case answers as the table says", arguments: [TestServer.Transport.socket, .inProcess])
    func table(_ transport: TestServer.Transport) throws {
        for (step, response) in zip(Self.steps, try Self.run(transport)) {
            #expect(response.status == step.status, "\(step.method) \(step.target)")
            if let expected = step.expectedBody {
                #expect(response.body == expected, "\(step.method) \(step.target)")
            }
        }
    }

    @Test("in process answers with the socket's status, body and framing")
    func sameAnswers() throws {
        let socket = try Self.run(.socket)
        let inProcess = try Self.run(.inProcess)
        for (step, (wire, direct)) in zip(Self.steps, zip(socket, inProcess)) {
            let what = "\(step.method) \(step.target)"
            #expect(direct.status == wire.status, "\(what)")
            #expect(direct.headers["Content-Type"] == wire.headers["Content-Type"], "\(what)")
            #expect(direct.headers["Content-Length"] == wire.headers["Content-Length"], "\(what)")
            #expect(direct.headers["Content-Range"] == wire.headers["Content-Range"], "\(what)")
            // Metadata answers hold generations and times of their own server; their shape is the same.
            if step.method == "GET" && step.target.contains("alt=media") {
                #expect(direct.body == wire.body, "\(what)")
            } else {
                #expect(direct.body.isEmpty == wire.body.isEmpty, "\(what)")
            }
        }
    }

    @Test("an in-process server opens no socket, and raw bytes need one")
    func noSocket() throws {
        let server = try TestServer(.inProcess, backend: .memory)
        #expect(server.port == 0)
        #expect(throws: HTTPTestClientError.self) { try server.client().sendRaw(bytes("GET / HTTP/1.1\r\n\r\n")) }
    }

    @Test("a client that goes away mid-upload leaves nothing behind, in process too")
    func abandonedUpload() throws {
        let server = try TestServer(.inProcess, backend: .memory)
        let client = server.client()
        try client.sendPartialAndDisconnect(
            method: "POST", target: bucketPath() + "?name=gone", body: Self.big, sendBytes: 70_000)
        #expect(try client.get(objectPath("gone")).status == 404)
        #expect(try server.metadata.listObjects(BucketName(bucket), prefix: "", startAfter: nil, limit: 10).isEmpty)
    }
}
