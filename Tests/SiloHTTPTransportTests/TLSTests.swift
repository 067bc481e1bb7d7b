#if os(Linux)
import Foundation
import SiloCore
import SiloEpollHTTP
import SiloHTTP
import SiloTLS
import SiloTesting
import Synchronization
import Testing

/// HTTPS on the epoll transport, driven by real clients (the curl and openssl command lines) against a certificate
/// from a CA each test makes: bodies of every kind, ALPN and versions, session tickets, records that wait inside
/// OpenSSL, the handshake under the head timeout, and reload on a live server.
@Suite struct TLSTests {
    @Test func curlDownloadsAndUploadsOverHTTPS() throws {
        try withTLSServer { fixture in
            let small = try fixture.curl(["\(fixture.url)/small"])
            #expect(small.output == "hello over tls")
            // A file body (sendfile over plain HTTP; bounded reads and SSL_write here), byte for byte.
            let downloaded = fixture.ca.directory.path + "/downloaded.bin"
            _ = try fixture.curl(["-o", downloaded, "\(fixture.url)/file"])
            #expect(FileManager.default.contentsEqual(atPath: downloaded, andPath: fixture.filePath))
            // A streamed body of unknown length (chunked), and an upload whose bytes the sink counts and sums.
            let streamed = try fixture.curl(["\(fixture.url)/stream"])
            #expect(streamed.output.utf8.count == 300_000, "the chunked body's length")
            #expect(streamed.output.utf8.allSatisfy { $0 == UInt8(ascii: "s") })
            let upload = fixture.ca.directory.path + "/upload.bin"
            let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try Data(bytes).write(to: URL(fileURLWithPath: upload))
            let received = try fixture.curl(["-T", upload, "\(fixture.url)/upload"])
            #expect(received.output == "received \(bytes.count) sum \(bytes.reduce(0) { $0 &+ UInt64($1) })")
        }
    }

    @Test func oneConnectionServesManyRequests() throws {
        try withTLSServer { fixture in
            let urls = (0..<5).map { "\(fixture.url)/small?\($0)" }
            let result = try fixture.curl(["-w", " %{num_connects}"] + urls)
            // The first transfer connects; the other four reuse its TLS connection.
            #expect(result.output == "hello over tls 1" + String(repeating: "hello over tls 0", count: 4))
        }
    }

    @Test func negotiatesHTTP11AndModernVersionsOnly() throws {
        try withTLSServer { fixture in
            let alpn = try fixture.sClient(["-alpn", "h2,http/1.1"])
            #expect(alpn.output.contains("ALPN protocol: http/1.1"))
            #expect(alpn.output.contains("TLSv1.3"))
            let tls12 = try fixture.sClient(["-tls1_2"])
            #expect(tls12.output.contains("Protocol  : TLSv1.2"))
            #expect(
                tls12.output.contains("ECDHE-ECDSA-AES128-GCM-SHA256") || tls12.output.contains("ECDHE-ECDSA-AES256"))
            // TLS 1.1, and TLS 1.2 without an AEAD suite, get no handshake.
            let tls11 = try fixture.sClient(["-tls1_1"], expectSuccess: false)
            #expect(!tls11.output.contains("Cipher is ECDHE"))
            let cbc = try fixture.sClient(["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"], expectSuccess: false)
            #expect(cbc.output.contains("Cipher is (NONE)") || cbc.status != 0)
            // h2 alone: no ALPN answer rather than an alert (the client may still speak HTTP/1.1).
            let h2 = try fixture.sClient(["-alpn", "h2"])
            #expect(h2.output.contains("No ALPN negotiated"))
        }
    }

    @Test func sessionTicketsResumeASession() throws {
        try withTLSServer { fixture in
            let session = fixture.ca.directory.path + "/session.pem"
            let first = try fixture.sClient(
                ["-sess_out", session], request: "GET /small HTTP/1.1\r\nHost: x\r\n\r\n", closeAfter: "hello over tls")
            #expect(first.output.contains("hello over tls"))
            let again = try fixture.sClient(["-sess_in", session])
            #expect(again.output.contains("Reused, TLSv1.3"))
        }
    }

    /// Thirty requests in one write: one TLS record larger than the connection's head buffer, so most of it waits
    /// inside OpenSSL with nothing left on the socket to wake the loop. All thirty are answered.
    @Test func recordsWaitingInsideOpenSSLAreServed() throws {
        try withTLSServer { fixture in
            let request = String(
                repeating: "GET /small HTTP/1.1\r\nHost: x\r\nX-Pad: \(String(repeating: "p", count: 200))\r\n\r\n",
                count: 30)
            let result = try fixture.sClient(["-quiet"], request: request, closeAfter: "hello over tls", count: 30)
            #expect(result.output.components(separatedBy: "hello over tls").count - 1 == 30)
        }
    }

    @Test func aHandshakeThatNeverFinishesIsCutAtTheHeadTimeout() throws {
        try withTLSServer(headTimeoutSeconds: 1) { fixture in
            let socket = try RawSocket(port: fixture.server.port, receiveTimeoutSeconds: 10)
            // The start of a ClientHello record, never completed.
            try socket.write([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
            #expect(try socket.readUntilClose().isEmpty)
            // Plain HTTP on the TLS port gets no answer in plain text either, and the server carries on.
            let plain = try RawSocket(port: fixture.server.port, receiveTimeoutSeconds: 10)
            try plain.write("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(!String(decoding: try plain.readUntilClose(), as: UTF8.self).contains("hello"))
            #expect(try fixture.curl(["\(fixture.url)/small"]).output == "hello over tls")
        }
    }

    /// SIGHUP's reload in `silo serve` calls this: a new connection sees the new certificate, one already open
    /// goes on with the old, and a bad new certificate leaves the one in service.
    @Test func reloadServesTheNewCertificateToNewConnectionsOnly() throws {
        try withTLSServer { fixture in
            #expect(try fixture.servedSerial() == "1001")
            let open = try OpenTLSConnection(port: fixture.server.port, ca: fixture.ca.certificateFile)
            defer { open.close() }
            #expect(try open.get("/small").contains("hello over tls"))

            try fixture.install(fixture.ca.issue("second", serial: 0x1002))
            #expect(try fixture.identity.reload().serialNumber == "1002")
            #expect(try fixture.servedSerial() == "1002")
            #expect(try open.get("/small").contains("hello over tls"))

            try "not a certificate".write(toFile: fixture.certificateFile, atomically: true, encoding: .utf8)
            #expect(throws: TLSError.self) { try fixture.identity.reload() }
            #expect(try fixture.servedSerial() == "1002")
            #expect(try open.get("/small").contains("hello over tls"))
        }
    }
}

// MARK: - Fixture

/// A TLS epoll server on a fresh CA's certificate (installed at `live.crt` / `live.key`, so a test can replace
/// it), with a handler that answers small, file, streamed and upload requests.
struct TLSFixture {
    let ca: TestCertificateAuthority
    let identity: TLSIdentity
    let server: EpollHTTPServer
    let certificateFile: String
    let keyFile: String
    let filePath: String

    var url: String { "https://localhost:\(server.port)" }

    func install(_ issued: TestCertificateAuthority.Issued) throws {
        for (from, to) in [(issued.certificateFile, certificateFile), (issued.privateKeyFile, keyFile)] {
            try? FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
    }

    func curl(_ arguments: [String]) throws -> ProcessResult {
        let result = try runProcess(
            "/usr/bin/curl", ["-sS", "--fail", "--max-time", "60", "--cacert", ca.certificateFile] + arguments)
        #expect(result.status == 0, "curl \(arguments): \(result.errors)")
        return result
    }

    /// `openssl s_client` against the server, verifying its certificate for localhost; sends `request` (or
    /// nothing) and ends at the end of its input, or, with `closeAfter`, once the server has answered `count` times
    /// with that text.
    func sClient(
        _ arguments: [String], request: String = "", closeAfter: String? = nil, count: Int = 1,
        expectSuccess: Bool = true
    ) throws -> ProcessResult {
        let result = try runProcess(
            "/usr/bin/openssl",
            [
                "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-verify_hostname",
                "localhost", "-CAfile", ca.certificateFile, "-verify_return_error",
            ] + (closeAfter == nil ? [] : ["-ign_eof"]) + arguments,
            input: request, until: closeAfter.map { ($0, count) })
        if expectSuccess { #expect(result.output.contains("Verify return code: 0") || arguments.contains("-quiet")) }
        return result
    }

    /// The serial number of the certificate a new connection is served.
    func servedSerial() throws -> String {
        let handshake = try sClient([])
        let certificate = ca.directory.path + "/served.pem"
        guard let begin = handshake.output.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = handshake.output.range(of: "-----END CERTIFICATE-----")
        else { return "" }
        try String(handshake.output[begin.lowerBound..<end.upperBound])
            .write(toFile: certificate, atomically: true, encoding: .utf8)
        let serial = try runProcess("/usr/bin/openssl", ["x509", "-in", certificate, "-noout", "-serial"])
        return serial.output.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(
            of: "serial=", with: "")
    }
}

func withTLSServer(headTimeoutSeconds: Int = 20, _ body: (TLSFixture) throws -> Void) throws {
    let ca = try TestCertificateAuthority()
    let certificateFile = ca.directory.path + "/live.crt"
    let keyFile = ca.directory.path + "/live.key"
    let first = try ca.issue("first", serial: 0x1001)
    try FileManager.default.copyItem(atPath: first.certificateFile, toPath: certificateFile)
    try FileManager.default.copyItem(atPath: first.privateKeyFile, toPath: keyFile)
    let identity = try TLSIdentity(certificateChainFile: certificateFile, privateKeyFile: keyFile)
    let filePath = ca.directory.path + "/body.bin"
    // 5 MiB and a bit: a 64 KiB pattern (not a multiple of a TLS record) repeated, so the debug build makes it fast.
    let pattern = Data((0..<65_521).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 12) })
    var contents = Data()
    for _ in 0..<80 { contents.append(pattern) }
    try contents.write(to: URL(fileURLWithPath: filePath))
    var configuration = EpollHTTPServer.Configuration(host: "127.0.0.1", port: 0)
    configuration.threadCount = 2
    configuration.tls = identity
    configuration.headTimeoutSeconds = headTimeoutSeconds
    let server = try EpollHTTPServer(
        handler: ClosureHandler { head in tlsTestAnswer(head, filePath: filePath) }, configuration: configuration,
        logger: testLogger)
    defer { server.shutdown(drainTimeout: 2) }
    try body(
        TLSFixture(
            ca: ca, identity: identity, server: server, certificateFile: certificateFile, keyFile: keyFile,
            filePath: filePath))
}

private func tlsTestAnswer(_ head: HTTPRequestHead, filePath: String) -> RequestDisposition {
    switch head.rawPath {
    case "/small":
        return .respond(HTTPResponse(status: 200, body: .bytes(Array("hello over tls".utf8))))
    case "/file":
        let fd = open(filePath, O_RDONLY | O_CLOEXEC)
        var info = stat()
        _ = fstat(fd, &info)
        return .respond(
            HTTPResponse(status: 200, body: .file(OwnedFileDescriptor(fd), offset: 0, length: Int64(info.st_size))))
    case "/stream":
        return .respond(HTTPResponse(status: 200, body: .stream(length: nil, RepeatingProducer(total: 300_000))))
    case "/upload":
        return .readBody(SummingSink())
    default:
        return .respond(HTTPResponse(status: 404))
    }
}

/// `total` bytes of `s`, in whatever blocks the transport asks for.
private final class RepeatingProducer: ResponseBodyProducer {
    private var left: Int
    init(total: Int) { left = total }
    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(left, buffer.count)
        if count > 0 { memset(buffer.baseAddress!, Int32(UInt8(ascii: "s")), count) }
        left -= count
        return count
    }
    func close() {}
}

/// Counts and sums the bytes of an upload, and answers with both.
private final class SummingSink: RequestBodySink {
    private var count = 0
    private var sum: UInt64 = 0
    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        count += chunk.count
        for byte in chunk { sum &+= UInt64(byte) }
        return nil
    }
    func finish() -> HTTPResponse {
        HTTPResponse(status: 200, body: .bytes(Array("received \(count) sum \(sum)".utf8)))
    }
    func abort() {}
    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
}

/// A TLS connection kept open across requests: `openssl s_client -quiet` with pipes both ways.
final class OpenTLSConnection {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    init(port: Int, ca: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "s_client", "-quiet", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-verify_hostname",
            "localhost", "-CAfile", ca, "-verify_return_error",
        ]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Sends a GET on this connection and reads until its small body has arrived.
    func get(_ path: String) throws -> String {
        input.fileHandleForWriting.write(Data("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        var received = Data()
        while !String(decoding: received, as: UTF8.self).contains("hello over tls") {
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { break }
            received += more
        }
        return String(decoding: received, as: UTF8.self)
    }

    func close() {
        try? input.fileHandleForWriting.close()
        // SIGKILL: after `Process.terminate()` (SIGTERM) `waitUntilExit()` returned only after 60 s, which made
        // this suite the last to finish in `make unit` (132 s alone, 2.5 s with SIGKILL).
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

struct ProcessResult {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs a program to its end with `input` on its standard input (``ChildProcess``). With `until`, it is stopped once
/// its output holds the text that many times (for clients told to go on past the end of their input).
func runProcess(_ path: String, _ arguments: [String], input: String = "", until: (String, Int)? = nil) throws
    -> ProcessResult
{
    let child = try ChildProcess(path, arguments)
    child.write(Data(input.utf8))
    if let (text, count) = until {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && child.isRunning {
            let seen = String(decoding: child.outputSoFar, as: UTF8.self).components(separatedBy: text).count - 1
            if seen >= count { break }
            usleep(10_000)
        }
        kill(child.processIdentifier, SIGKILL)  // not `terminate()`: see OpenTLSConnection.close()
    }
    let result = child.wait()
    #expect(result.pipesClosed, "a pipe of \(path) stayed open 30 s after it ended")
    return ProcessResult(
        status: result.status, output: String(decoding: result.output + result.errors, as: UTF8.self),
        errors: result.errorText)
}
#endif
