import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// A body declared longer than its route takes (`Content-Length` above `--max-json-body-bytes`, the batch bound,
/// `--max-object-size`, …) is refused with 413 from the head, before a byte of it is sent, and the connection is
/// closed: RFC 9110 §15.5.14 lets the server close rather than read a body it refuses. The tests send only the head
/// and read the answer: a server that waits for the body never answers them.
@Suite struct DeclaredLengthTests {
    static let terabyte: Int64 = 1 << 40

    /// A server whose objects may be at most 1 MiB, with a bucket.
    static func server() throws -> TestServer {
        var configuration = ServerConfiguration()
        configuration.maxObjectSize = 1 << 20
        let server = try TestServer(configuration: configuration)
        let client = server.client()
        #expect(
            try client.send(method: "POST", target: "/storage/v1/b", body: bytes(#"{"name":"edge"}"#)).status == 200)
        #expect(try client.mediaUpload("a.txt", bytes("a")).status == 200)
        return server
    }

    /// Sends a head declaring `length` body bytes, and none of them; returns the answer.
    static func declare(
        _ server: TestServer, _ method: String, _ target: String, length: Int64, headers: [String] = []
    ) throws -> TestResponse {
        let client = HTTPTestClient(port: server.port, timeoutSeconds: 5)
        let lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1:\(server.port)", "Content-Length: \(length)"]
        try client.sendRaw(bytes((lines + headers).joined(separator: "\r\n") + "\r\n\r\n"))
        return try client.readResponse(method: method)
    }

    @Test("JSON, batch, XML and token bodies declared beyond their bound are refused at once")
    func smallBodies() throws {
        let server = try Self.server()
        let json = "Content-Type: application/json"
        let cases: [(String, String, [String])] = [
            ("PATCH", "/storage/v1/b/edge/o/a.txt", [json]),
            // A partial response's stage wraps the sink; the bound goes with it.
            ("PATCH", "/storage/v1/b/edge/o/a.txt?fields=name", [json]),
            ("PATCH", "/v0/b/\(bucket)/o/a.txt", [json]),
            ("POST", "/upload/storage/v1/b/edge/o?uploadType=resumable&name=r.bin", [json]),
            ("POST", "/batch/storage/v1", ["Content-Type: multipart/mixed; boundary=b"]),
            ("PUT", "/edge?versioning", []),
            ("POST", "/token", ["Content-Type: application/x-www-form-urlencoded"]),
        ]
        for (method, target, headers) in cases {
            let response = try Self.declare(server, method, target, length: Self.terabyte, headers: headers)
            #expect(response.status == 413, "\(method) \(target): \(response.status) \(response.text)")
            #expect(response.headers["Connection"] == "close", "\(method) \(target)")
        }
    }

    @Test("uploads declared beyond --max-object-size are refused at once, on every API")
    func uploads() throws {
        let server = try Self.server()
        let related = "Content-Type: multipart/related; boundary=b"
        let cases: [(String, String, [String])] = [
            ("POST", "/v0/b/\(bucket)/o?name=big.bin", []),
            ("POST", "/v0/b/\(bucket)/o?name=big.bin", ["X-Goog-Upload-Protocol: multipart", related]),
            ("POST", "/upload/storage/v1/b/edge/o?uploadType=media&name=big.bin", []),
            ("POST", "/upload/storage/v1/b/edge/o?uploadType=multipart", [related]),
            ("PUT", "/edge/big.bin", []),
        ]
        for (method, target, headers) in cases {
            let response = try Self.declare(server, method, target, length: 64 << 20, headers: headers)
            #expect(response.status == 413, "\(method) \(target): \(response.status) \(response.text)")
            #expect(response.headers["Connection"] == "close", "\(method) \(target)")
        }
        // Nothing was stored, and bodies within the bounds still go through.
        let client = server.client()
        #expect(try client.get("/storage/v1/b/edge/o/big.bin").status == 404)
        #expect(try client.mediaUpload("small.bin", pattern(1 << 20)).status == 200)
    }
}
