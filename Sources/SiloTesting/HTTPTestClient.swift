public import SiloHTTP

#if canImport(Glibc)
import Glibc
#endif

/// A small blocking HTTP/1.1 client on a raw socket, for tests that must control the bytes on the wire: the
/// request target is sent exactly as given (`%2F`, `+`, `$,=:@`), any method and Host header are allowed, and
/// bodies can be chunked or cut off mid-way.
///
/// One connection is kept alive and reused; ``connectionsOpened`` counts how many were made. Every read has a
/// timeout so a test cannot hang. Not thread-safe: use one client per thread.
public final class HTTPTestClient {
    public let host: String
    public let port: Int
    public let timeoutSeconds: Double
    /// Connections opened so far (1 after many keep-alive requests).
    public private(set) var connectionsOpened = 0

    /// Set for a client of ``TestServer/Transport/inProcess``: requests go to the handler, not to a socket.
    private let inProcess: (any HTTPHandler)?
    private var socket: Int32 = -1
    private var pending: [UInt8] = []
    private var pendingStart = 0

    public enum BodyMode: Sendable {
        /// `Content-Length` is added unless the headers already have one.
        case contentLength
        /// `Transfer-Encoding: chunked`, in pieces of this many bytes.
        case chunked(pieceSize: Int)
        /// The body is sent as given, and no length header is added.
        case raw
    }

    public init(host: String = "127.0.0.1", port: Int, timeoutSeconds: Double = 10) {
        self.host = host
        self.port = port
        self.timeoutSeconds = timeoutSeconds
        inProcess = nil
    }

    /// A client that hands each request straight to `handler` (see ``InProcessExchange``): ``send(method:target:headers:body:bodyMode:)``
    /// and ``sendPartialAndDisconnect(method:target:headers:body:sendBytes:)`` work as on a socket; the calls that
    /// write raw bytes throw.
    public init(inProcess handler: any HTTPHandler, host: String = "127.0.0.1") {
        self.host = host
        port = 0
        timeoutSeconds = 0
        inProcess = handler
    }

    deinit { disconnect() }

    /// Sends one request and reads its response. With `Expect: 100-continue` in `headers`, the body is sent only
    /// after the server's `100 Continue` (a final answer instead ends the exchange).
    public func send(
        method: String, target: String, headers: HTTPHeaders = [:], body: [UInt8] = [],
        bodyMode: BodyMode = .contentLength
    ) throws -> TestResponse {
        if let inProcess {
            let exchange = InProcessExchange(handler: inProcess)
            let pieceSize: Int? = if case .chunked(let size) = bodyMode { size } else { nil }
            return try exchange.send(
                method: method, target: target,
                headers: framed(method: method, headers: headers, body: body, bodyMode: bodyMode), body: body,
                pieceSize: pieceSize)
        }
        let reused = socket >= 0
        do {
            return try exchange(method: method, target: target, headers: headers, body: body, bodyMode: bodyMode)
        } catch let error as HTTPTestClientError where reused && error.isStaleConnection {
            // The server closed the idle keep-alive connection before our request reached it: retry once.
            disconnect()
            return try exchange(method: method, target: target, headers: headers, body: body, bodyMode: bodyMode)
        }
    }

    /// Sends the head (declaring the whole body's length) and the first `sendBytes` bytes of `body`, then closes
    /// the socket: a client that goes away mid-upload.
    public func sendPartialAndDisconnect(
        method: String, target: String, headers: HTTPHeaders = [:], body: [UInt8], sendBytes: Int
    ) throws {
        if let inProcess {
            let fields = framed(method: method, headers: headers, body: body, bodyMode: .contentLength)
            InProcessExchange(handler: inProcess).abandon(
                method: method, target: target, headers: fields, body: Array(body.prefix(sendBytes)))
            return
        }
        disconnect()
        try connect()
        try writeAll(
            requestHead(method: method, target: target, headers: headers, body: body, bodyMode: .contentLength))
        try writeAll(Array(body.prefix(sendBytes)))
        disconnect()
    }

    /// Writes bytes as they are (for pipelining or malformed requests); read answers with ``readResponse(method:)``.
    public func sendRaw(_ bytes: [UInt8]) throws {
        if socket < 0 { try connect() }
        try writeAll(bytes)
    }

    /// Reads the next response on the connection. `method` decides whether a body follows (not for HEAD).
    public func readResponse(method: String = "GET") throws -> TestResponse {
        var response = try readHead(skippingInterim: true)
        response.body = try readBody(of: response, method: method)
        if response.closesConnection { disconnect() }
        return response
    }

    /// Reads the next head on the connection, an interim one (`100 Continue`) included: after ``sendRaw(_:)`` of a
    /// head with `Expect: 100-continue`, the `100` says the server has routed the request and decided its access.
    public func readHead() throws -> TestResponse { try readHead(skippingInterim: false) }

    /// Closes the connection; the next request opens a new one.
    public func disconnect() {
        if socket >= 0 { _ = close(socket) }
        socket = -1
        pending = []
        pendingStart = 0
    }

    // MARK: - Exchange

    private func exchange(method: String, target: String, headers: HTTPHeaders, body: [UInt8], bodyMode: BodyMode)
        throws -> TestResponse
    {
        if socket < 0 { try connect() }
        try writeAll(requestHead(method: method, target: target, headers: headers, body: body, bodyMode: bodyMode))
        let awaitsContinue = headers["Expect"].map { equalsIgnoringCase($0, "100-continue") } ?? false
        if awaitsContinue && !body.isEmpty {
            let first = try readHead(skippingInterim: false)
            if first.status != 100 {
                var response = first
                response.body = try readBody(of: response, method: method)
                if response.closesConnection { disconnect() }
                return response
            }
        }
        try writeBody(body, mode: bodyMode)
        return try readResponse(method: method)
    }

    private func requestHead(method: String, target: String, headers: HTTPHeaders, body: [UInt8], bodyMode: BodyMode)
        -> [UInt8]
    {
        var text = "\(method) \(target) HTTP/1.1\r\n"
        for field in framed(method: method, headers: headers, body: body, bodyMode: bodyMode) {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// `headers` with the Host and framing fields a request with `body` sent in `bodyMode` carries.
    private func framed(method: String, headers: HTTPHeaders, body: [UInt8], bodyMode: BodyMode) -> HTTPHeaders {
        var fields = headers
        if !fields.contains("Host") { fields.add("Host", host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)") }
        switch bodyMode {
        case .contentLength:
            let needsLength = !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method)
            if needsLength && !fields.contains("Content-Length") { fields.add("Content-Length", "\(body.count)") }
        case .chunked:
            if !fields.contains("Transfer-Encoding") { fields.add("Transfer-Encoding", "chunked") }
        case .raw:
            break
        }
        return fields
    }

    private func writeBody(_ body: [UInt8], mode: BodyMode) throws {
        switch mode {
        case .contentLength, .raw:
            if !body.isEmpty { try writeAll(body) }
        case .chunked(let pieceSize):
            var offset = 0
            while offset < body.count {
                let end = min(body.count, offset + max(1, pieceSize))
                try writeAll(Array(String(end - offset, radix: 16).utf8) + [13, 10] + body[offset..<end] + [13, 10])
                offset = end
            }
            try writeAll(Array("0\r\n\r\n".utf8))
        }
    }

    // MARK: - Response parsing

    private func readHead(skippingInterim: Bool) throws -> TestResponse {
        while true {
            let statusLine = try readLine()
            let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
                throw HTTPTestClientError("malformed status line: \(statusLine)")
            }
            var headers = HTTPHeaders()
            while true {
                let line = try readLine()
                if line.isEmpty { break }
                guard let colon = line.firstIndex(of: ":") else {
                    throw HTTPTestClientError("malformed header: \(line)")
                }
                let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
                headers.add(String(line[..<colon]), String(value))
            }
            if skippingInterim && (100...199).contains(status) { continue }
            return TestResponse(status: status, headers: headers, body: [], version: String(parts[0]))
        }
    }

    private func readBody(of response: TestResponse, method: String) throws -> [UInt8] {
        if method == "HEAD" || (100...199).contains(response.status) || response.status == 204
            || response.status == 304
        {
            return []
        }
        if let encoding = response.headers["Transfer-Encoding"], encoding.lowercased().contains("chunked") {
            var body: [UInt8] = []
            while true {
                let sizeLine = try readLine()
                let sizeText = sizeLine.split(separator: ";").first.map { String($0).trimmingCharacters() } ?? ""
                guard let size = Int(sizeText, radix: 16) else {
                    throw HTTPTestClientError("bad chunk size: \(sizeLine)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}  // trailers
                    return body
                }
                body += try readExactly(size)
                guard try readLine().isEmpty else { throw HTTPTestClientError("chunk not followed by CRLF") }
            }
        }
        if let lengthText = response.headers["Content-Length"] {
            guard let length = Int(lengthText) else { throw HTTPTestClientError("bad Content-Length: \(lengthText)") }
            return try readExactly(length)
        }
        return try readUntilClose()
    }

    // MARK: - Socket

    private func connect() throws {
        guard inProcess == nil else {
            throw HTTPTestClientError("an in-process client has no socket to write raw bytes to")
        }
        guard let address = SocketAddress(numericHost: ServerLifecycle.normalizedHost(host), port: port) else {
            throw HTTPTestClientError("host \(host) is not a numeric address")
        }
        let fd = Glibc.socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HTTPTestClientError(call: "socket") }
        var timeout = timeval(
            tv_sec: Int(timeoutSeconds), tv_usec: Int((timeoutSeconds - timeoutSeconds.rounded(.down)) * 1e6))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var on: Int32 = 1
        // Head and body go out in separate writes; without this, Nagle plus delayed ACK adds 40 ms per request.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        let result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        guard result == 0 else {
            let error = HTTPTestClientError(call: "connect to \(host):\(port)")
            _ = close(fd)
            throw error
        }
        socket = fd
        connectionsOpened += 1
        pending = []
        pendingStart = 0
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a server that closed the connection must make this throw, not kill the test process.
            let written = bytes.withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw HTTPTestClientError(call: "send", stale: errno == EPIPE || errno == ECONNRESET)
            }
            offset += written
        }
    }

    /// Reads more bytes into `pending`; returns false at end of stream.
    private func fill() throws -> Bool {
        if pendingStart > 0 && pendingStart == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
        }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                pending += chunk[0..<count]
                return true
            }
            if count == 0 { return false }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw HTTPTestClientError("timed out after \(timeoutSeconds) s waiting for the server")
            }
            throw HTTPTestClientError(call: "recv", stale: errno == ECONNRESET)
        }
    }

    private func readLine() throws -> String {
        while true {
            if let end = pending[pendingStart...].firstIndex(of: 10) {
                var lineEnd = end
                if lineEnd > pendingStart && pending[lineEnd - 1] == 13 { lineEnd -= 1 }
                let line = String(decoding: pending[pendingStart..<lineEnd], as: UTF8.self)
                pendingStart = end + 1
                return line
            }
            guard try fill() else {
                // Nothing at all arrived on a reused connection: the server had closed it.
                throw HTTPTestClientError("connection closed by the server", stale: pendingStart == pending.count)
            }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while pending.count - pendingStart < count {
            guard try fill() else {
                throw HTTPTestClientError(
                    "connection closed after \(pending.count - pendingStart) of \(count) body bytes")
            }
        }
        let bytes = Array(pending[pendingStart..<(pendingStart + count)])
        pendingStart += count
        return bytes
    }

    private func readUntilClose() throws -> [UInt8] {
        while try fill() {}
        let bytes = Array(pending[pendingStart...])
        disconnect()
        return bytes
    }
}

/// A response as read from the wire.
public struct TestResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String

    /// The body as UTF-8 text (invalid bytes replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }

    var closesConnection: Bool {
        let connection = headers["Connection"]?.lowercased() ?? ""
        if connection.contains("close") { return true }
        return version == "HTTP/1.0" && !connection.contains("keep-alive")
    }
}

public struct HTTPTestClientError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// The failure looks like a keep-alive connection the server had already closed.
    var isStaleConnection: Bool

    init(_ message: String, stale: Bool = false) {
        self.message = message
        self.isStaleConnection = stale
    }

    init(call: String, stale: Bool = false) {
        let code = errno
        self.init("\(call): \(String(cString: strerror(code))) (errno \(code))", stale: stale)
    }

    public var description: String { message }
}

extension String {
    fileprivate func trimmingCharacters() -> String {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}
