import SiloCore
import SiloHTTP
import SiloHashing
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// GCS serves a `Content-Encoding: gzip` object decompressed to a client that does not send `Accept-Encoding: gzip`
/// (decompressive transcoding, cloud.google.com/storage/docs/transcoding), and Silo keeps doing so; but the
/// inflating is work the object's stored size does not bound, so it counts against the caller's budget of inflated
/// bytes per minute (`--max-inflated-bytes-per-caller`): past it the stream is cut off and the next transcoding is
/// refused with 429, and `/metrics` counts both.
@Suite struct TranscodingBudgetTests {
    static let budget: Int64 = 256 << 10
    /// 8 MiB of zeros: about 8 KiB stored.
    static let inflated = [UInt8](repeating: 0, count: 8 << 20)
    let server: TestServer
    let stored: [UInt8]

    init() throws {
        var configuration = ServerConfiguration()
        configuration.maxInflatedBytesPerCallerPerMinute = Self.budget
        server = try TestServer(configuration: configuration)
        stored = try GzipDeflater.compress(Self.inflated)
        let boundary = "gzip-object"
        let body =
            bytes(
                "--\(boundary)\r\nContent-Type: application/json\r\n\r\n"
                    + #"{"name":"bomb.txt","contentType":"text/plain","contentEncoding":"gzip"}"#
                    + "\r\n--\(boundary)\r\nContent-Type: text/plain\r\n\r\n") + stored
            + bytes("\r\n--\(boundary)--\r\n")
        let client = server.client()
        #expect(try client.send(method: "POST", target: "/storage/v1/b", body: bytes(#"{"name":"gz"}"#)).status == 200)
        let upload = try client.send(
            method: "POST", target: "/upload/storage/v1/b/gz/o?uploadType=multipart",
            headers: ["Content-Type": "multipart/related; boundary=\(boundary)"], body: body)
        #expect(upload.status == 200, "\(upload.text)")
    }

    /// What a download answered: its status, the body bytes (chunks decoded), and whether the body was complete.
    struct Download {
        var status: Int
        var body: [UInt8]
        var complete: Bool
    }

    func download(_ headers: [String] = []) throws -> Download {
        let wire = try RawConnection(port: server.port)
        let lines = ["GET /storage/v1/b/gz/o/bomb.txt?alt=media HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
        try wire.send((lines + headers).joined(separator: "\r\n") + "\r\n\r\n")
        let (received, _) = wire.readToEnd()
        let (head, raw) = try #require(RawConnection.split(received))
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        guard head.lowercased().contains("transfer-encoding: chunked") else {
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].filter { $0 != " " }) }
            return Download(status: status, body: raw, complete: length == raw.count)
        }
        var body: [UInt8] = []
        var index = 0
        while let lineEnd = raw[index...].firstIndex(of: 10) {
            let size = Int(String(decoding: raw[index..<lineEnd], as: UTF8.self).filter { $0 != "\r" }, radix: 16)
            guard let size else { break }
            if size == 0 { return Download(status: status, body: body, complete: true) }
            guard lineEnd + 1 + size + 2 <= raw.count else {
                body += raw[(lineEnd + 1)...].prefix(size)
                break
            }
            body += raw[(lineEnd + 1)..<(lineEnd + 1 + size)]
            index = lineEnd + 1 + size + 2
        }
        return Download(status: status, body: body, complete: false)
    }

    @Test("past its caller's budget a transcoding is cut off, then refused with 429; gzip as stored is not counted")
    func budgetPerCaller() throws {
        let first = try download()
        #expect(first.status == 200)
        #expect(!first.complete && first.body.count >= Int(Self.budget) && first.body.count < Self.inflated.count)
        #expect(first.body.allSatisfy { $0 == 0 })
        let second = try download()
        #expect(second.status == 429, "\(second.status) \(second.body.count) bytes")
        // Another caller has a budget of its own; the admin has none.
        let alice = try download(["Authorization: Bearer \(emulatorToken(uid: "alice"))"])
        #expect(alice.status == 200 && !alice.complete && alice.body.count < Self.inflated.count)
        let admin = try download(["Authorization: Bearer owner"])
        #expect(admin.status == 200 && admin.complete && admin.body == Self.inflated)
        // Sent as stored, the object costs no inflating, whatever the budget.
        let gzip = try download(["Accept-Encoding: gzip"])
        #expect(gzip.status == 200 && gzip.complete && gzip.body == stored)
        let metrics = ScrapedMetrics(try server.client().get("/metrics").text)
        #expect(metrics.types["silo_transcoded_bytes_total"] == "counter")
        let counted = metrics.samples.first { $0.name == "silo_transcoded_bytes_total" }?.value ?? 0
        #expect(counted >= Double(Self.inflated.count) + 2 * Double(Self.budget), "\(counted)")
        #expect((metrics.samples.first { $0.name == "silo_transcode_refusals_total" }?.value ?? 0) >= 3)
    }
}
