import SiloHTTP

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP exchange carried out by calling an ``HTTPHandler`` directly, as a transport would, with no socket: the
/// head goes to an inline answerer and then to what it declined (`begin`, or the rest it deferred); a body goes to the sink in pieces, then `finish` (or stops at the
/// sink's early answer); the answer's body is read whole (bytes, file ranges with `pread`, stream producers drained
/// and closed). The response gets the framing fields a transport adds (`Content-Length`, `Connection: close` after an
/// early answer), so it reads like one from ``HTTPTestClient``.
///
/// What it cannot show: anything about the wire — what the request parser refuses (control characters in a header
/// value, two Host fields, bytes that are not UTF-8 in the target), framing, keep-alive, 100-continue, timeouts,
/// header fields the transport drops, transport faults, a client going away mid-body (except as `abort`). Those
/// stay with the live-socket suites.
struct InProcessExchange {
    let handler: any HTTPHandler
    /// The largest piece of request body one `receive` gets (a transport's read size).
    static let pieceSize = 64 * 1024

    /// `headers` are as the client frames them (Host, Content-Length or Transfer-Encoding).
    func send(method: String, target: String, headers: HTTPHeaders, body: [UInt8], pieceSize: Int?) throws
        -> TestResponse
    {
        var closes = false
        let response: HTTPResponse
        switch begin(method: method, target: target, headers: headers) {
        case .respond(let answer):
            response = answer
        case .readBody(let sink):
            if let early = Self.feed(body, to: sink, pieceSize: max(1, pieceSize ?? Self.pieceSize)) {
                // The transport closes the connection after an answer that leaves the body unread.
                (response, closes) = (early, true)
            } else {
                response = sink.finish()
            }
        }
        return try Self.read(response, method: method, closesConnection: closes)
    }

    /// A client that goes away after `body` (part of what `headers` declare): the sink gets it, then `abort`.
    func abandon(method: String, target: String, headers: HTTPHeaders, body: [UInt8]) {
        guard case .readBody(let sink) = begin(method: method, target: target, headers: headers) else { return }
        if Self.feed(body, to: sink, pieceSize: Self.pieceSize) == nil { sink.abort() }
    }

    /// As a transport begins: the inline answer when the handler has one, else what it declined (on a worker, there).
    private func begin(method: String, target: String, headers: HTTPHeaders) -> RequestDisposition {
        let head = HTTPRequestHead(method: method, target: target, headers: headers)
        return handler.beginOnThisThread(head)
    }

    /// The body in pieces; the sink's early answer, if it gives one (it then gets no more calls).
    private static func feed(_ body: [UInt8], to sink: any RequestBodySink, pieceSize: Int) -> HTTPResponse? {
        var offset = 0
        while offset < body.count {
            let end = min(body.count, offset + pieceSize)
            if let early = body[offset..<end].withUnsafeBytes({ sink.receive($0) }) { return early }
            offset = end
        }
        return nil
    }

    private static func read(_ response: HTTPResponse, method: String, closesConnection: Bool) throws -> TestResponse {
        var headers = HTTPHeaders()
        for field in response.headers where !HTTPHeaders.isTransportField(field.name) {
            headers.add(field.name, field.value)
        }
        // As the transports send it.
        if let id = response.requestID { headers.add("X-Request-Id", id) }
        let status = response.status
        let bodyless = method == "HEAD" || status == 304 || status == 204 || (100...199).contains(status)
        var bytes = try drain(response.body)
        if bodyless {
            // HEAD and 304 may declare the length of a body they do not send.
            if status != 204, let declared = response.headers["Content-Length"] ?? response.body.length.map(String.init)
            {
                headers.add("Content-Length", declared)
            }
            bytes = []
        } else if let length = response.body.length {
            headers.add("Content-Length", String(length))
        } else {
            headers.add("Transfer-Encoding", "chunked")
        }
        let closes =
            closesConnection || response.headers["Connection"].map { $0.lowercased().contains("close") } ?? false
        if closes { headers.add("Connection", "close") }
        return TestResponse(status: status, headers: headers, body: bytes, version: "HTTP/1.1")
    }

    /// Everything the body holds, as the transport would send it.
    private static func drain(_ body: ResponseBody) throws -> [UInt8] {
        switch body {
        case .empty:
            return []
        case .bytes(let bytes):
            return bytes
        case .file(let descriptor, let offset, let length):
            var out = [UInt8](repeating: 0, count: Int(length))
            var done = 0
            while done < out.count {
                let count = out.withUnsafeMutableBytes {
                    pread(descriptor.rawValue, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done))
                }
                guard count > 0 else {
                    throw HTTPTestClientError("a file body ended at \(done) of \(length) bytes")
                }
                done += count
            }
            return out
        case .stream(_, let producer):
            defer { producer.close() }
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: pieceSize)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try producer.produce(into: $0) }
                guard count > 0 else { return out }
                out += buffer[..<count]
            }
        }
    }
}
