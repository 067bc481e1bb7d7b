import SiloHTTP

/// How the body of a request is delimited, decided from its head.
enum RequestFraming: Equatable {
    case none
    case length(Int64)
    case chunked
}

/// A request head plus what the transport decides from it.
struct ParsedRequest {
    var head: HTTPRequestHead
    var framing: RequestFraming
    /// The connection may serve another request after this one (HTTP/1.1 without `Connection: close`, or
    /// HTTP/1.0 with `Connection: keep-alive`).
    var keepAlive: Bool
    /// `Expect: 100-continue` on HTTP/1.1: the client waits for `100 Continue` before sending the body.
    var awaitsContinue: Bool
    var isHeadMethod: Bool
    var isHTTP10: Bool
}

enum HeadParseResult {
    /// No blank line yet; `resumeAt` is where the next search may start (relative to the buffer start).
    case incomplete(resumeAt: Int)
    /// The head occupied the first `consumed` bytes.
    case complete(ParsedRequest, consumed: Int)
    /// Answer `status` and close the connection.
    case invalid(status: Int, reason: String)
}

/// Parses an HTTP/1.x request head from bytes as received: one pass to find the blank line (memchr from line to
/// line, resumable so a head arriving byte by byte is not rescanned), one pass that builds each string once.
/// Pure: no I/O, no allocation before the head is complete.
enum RequestHeadParser {
    /// `peer`, `local` and `isSecure` are the connection's, given to the head as it is made (setting them on it
    /// afterwards would copy its fields).
    static func parse(
        _ bytes: UnsafeRawBufferPointer, resumeAt: Int = 0, peer: PeerAddress? = nil, local: LocalEndpoint? = nil,
        isSecure: Bool = false
    ) -> HeadParseResult {
        guard bytes.baseAddress != nil, bytes.count > 0 else { return .incomplete(resumeAt: 0) }
        // CR and LF bytes before the request line are skipped (RFC 9112 2.2 asks to ignore at least one empty
        // line); the head starts at the first other byte, so every line from there is part of it. (The connection
        // drops such bytes before calling, so a flood of them costs one pass.)
        let lead = leadingLineBreaks(bytes)
        switch headEnd(bytes, lead: lead, resumeAt: resumeAt) {
        case .incomplete(let resumeAt): return .incomplete(resumeAt: resumeAt)
        case .found(let end):
            return parseLines(bytes, from: lead, end: end, peer: peer, local: local, isSecure: isSecure)
        }
    }

    enum HeadEnd {
        /// The head ends before this offset: its last byte is the empty line's LF.
        case found(Int)
        /// No empty line yet; the next search may start here.
        case incomplete(resumeAt: Int)
    }

    /// Where the head that starts at `lead` ends: after the first empty line (LF or CR LF) past the request line.
    /// `resumeAt` is a previous search's ``HeadEnd/incomplete(resumeAt:)``.
    static func headEnd(_ bytes: UnsafeRawBufferPointer, lead: Int, resumeAt: Int) -> HeadEnd {
        guard let base = bytes.baseAddress else { return .incomplete(resumeAt: 0) }
        var lineStart = max(resumeAt, lead)
        while lineStart < bytes.count {
            guard let lf = memchr(base + lineStart, 0x0A, bytes.count - lineStart) else { break }
            let lfIndex = base.distance(to: UnsafeRawPointer(lf))
            let lineLength = lfIndex - lineStart
            if lineStart > lead && (lineLength == 0 || (lineLength == 1 && bytes[lineStart] == 0x0D)) {
                return .found(lfIndex + 1)
            }
            lineStart = lfIndex + 1
        }
        // Resume at the start of the unfinished line.
        return .incomplete(resumeAt: lineStart)
    }

    /// How many CR and LF bytes the buffer starts with: what comes before a request line and belongs to none.
    static func leadingLineBreaks(_ bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0
        while count < bytes.count && (bytes[count] == 0x0D || bytes[count] == 0x0A) { count += 1 }
        return count
    }

    /// The head in `bytes[lead..<end]`, `end` as ``headEnd(_:lead:resumeAt:)`` found it.
    static func parseLines(
        _ bytes: UnsafeRawBufferPointer, from lead: Int, end: Int, peer: PeerAddress?, local: LocalEndpoint? = nil,
        isSecure: Bool
    ) -> HeadParseResult {
        var cursor = lead
        guard let requestLine = nextLine(bytes, &cursor, end: end) else {
            return .invalid(status: 400, reason: "no request line")
        }
        let line: RequestLine
        switch parseRequestLine(bytes, requestLine) {
        case .success(let parsed): line = parsed
        case .failure(let failure): return .invalid(status: failure.status, reason: failure.reason)
        }

        var headers = HTTPHeaders()
        headers.reserveCapacity(countLines(bytes, from: cursor, to: end))
        var contentLength: Int64?
        var transferEncodings: [Range<Int>] = []
        var connectionClose = false
        var connectionKeepAlive = false
        var expectContinue = false
        while let line = nextLine(bytes, &cursor, end: end), !line.isEmpty {
            let first = bytes[line.lowerBound]
            if first == 0x20 || first == 0x09 { return .invalid(status: 400, reason: "folded header line") }
            var colon = line.lowerBound
            while colon < line.upperBound && bytes[colon] != 0x3A {
                guard isTokenByte(bytes[colon]) else { return .invalid(status: 400, reason: "bad header name") }
                colon += 1
            }
            guard colon < line.upperBound, colon > line.lowerBound else {
                return .invalid(status: 400, reason: "bad header line")
            }
            var valueStart = colon + 1
            var valueEnd = line.upperBound
            while valueStart < valueEnd && (bytes[valueStart] == 0x20 || bytes[valueStart] == 0x09) { valueStart += 1 }
            while valueEnd > valueStart && (bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09) {
                valueEnd -= 1
            }
            for i in valueStart..<valueEnd {
                let byte = bytes[i]
                if (byte < 0x20 && byte != 0x09) || byte == 0x7F {
                    return .invalid(status: 400, reason: "control character in header value")
                }
            }
            let name = line.lowerBound..<colon
            let value = valueStart..<valueEnd
            if equalsLowercase(bytes, name, "content-length") {
                guard let length = parseContentLength(bytes, value) else {
                    return .invalid(status: 400, reason: "bad Content-Length")
                }
                if let earlier = contentLength, earlier != length {
                    return .invalid(status: 400, reason: "conflicting Content-Length")
                }
                contentLength = length
            } else if equalsLowercase(bytes, name, "transfer-encoding") {
                transferEncodings.append(value)
            } else if equalsLowercase(bytes, name, "connection") {
                forEachToken(bytes, value) { token in
                    if equalsLowercase(bytes, token, "close") { connectionClose = true }
                    if equalsLowercase(bytes, token, "keep-alive") { connectionKeepAlive = true }
                }
            } else if equalsLowercase(bytes, name, "expect") {
                if equalsLowercase(bytes, value, "100-continue") { expectContinue = true }
            }
            headers.add(text(bytes, name, among: commonFieldNames), string(bytes, value))
        }

        var framing = RequestFraming.none
        if !transferEncodings.isEmpty {
            // Request smuggling defence: a body framed two ways is refused (RFC 9112 6.3).
            if contentLength != nil {
                return .invalid(status: 400, reason: "both Content-Length and Transfer-Encoding")
            }
            // HTTP/1.0 has no transfer codings; a proxy in front would frame the body by the connection's end while
            // we decode chunks (RFC 9112 6.1).
            if line.isHTTP10 { return .invalid(status: 400, reason: "Transfer-Encoding on HTTP/1.0") }
            var codings = 0
            var onlyChunked = true
            for value in transferEncodings {
                forEachToken(bytes, value) { token in
                    codings += 1
                    if !equalsLowercase(bytes, token, "chunked") { onlyChunked = false }
                }
            }
            guard codings > 0 else { return .invalid(status: 400, reason: "empty Transfer-Encoding") }
            guard onlyChunked, codings == 1 else {
                return .invalid(status: 501, reason: "unsupported transfer coding")
            }
            framing = .chunked
        } else if let contentLength, contentLength > 0 {
            framing = .length(contentLength)
        }
        // Made once, whole: the head's fields share one copy-on-write storage.
        let head = HTTPRequestHead(
            method: line.method, rawPath: line.rawPath, rawQuery: line.rawQuery, headers: headers,
            version: line.isHTTP10 ? "HTTP/1.0" : "HTTP/1.1", peer: peer, local: local, isSecure: isSecure)
        let request = ParsedRequest(
            head: head, framing: framing,
            keepAlive: line.isHTTP10 ? (connectionKeepAlive && !connectionClose) : !connectionClose,
            awaitsContinue: expectContinue && !line.isHTTP10, isHeadMethod: line.method == "HEAD",
            isHTTP10: line.isHTTP10)
        return .complete(request, consumed: end)
    }

    /// The parts of a request line.
    private struct RequestLine {
        var method: String
        var rawPath: String
        var rawQuery: String
        var isHTTP10: Bool
    }

    private struct Failure: Error {
        var status: Int
        var reason: String
    }

    private static func parseRequestLine(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> Result<
        RequestLine, Failure
    > {
        // method SP request-target SP HTTP-version, single spaces (RFC 9112 3).
        var i = line.lowerBound
        while i < line.upperBound && bytes[i] != 0x20 {
            guard isTokenByte(bytes[i]) else { return .failure(Failure(status: 400, reason: "bad method")) }
            i += 1
        }
        let method = line.lowerBound..<i
        guard !method.isEmpty, i < line.upperBound else {
            return .failure(Failure(status: 400, reason: "bad request line"))
        }
        i += 1
        let targetStart = i
        var query = -1
        var nonASCII = false
        while i < line.upperBound && bytes[i] != 0x20 {
            let byte = bytes[i]
            guard byte > 0x20 && byte != 0x7F else {
                return .failure(Failure(status: 400, reason: "bad character in request target"))
            }
            if byte == 0x3F && query < 0 { query = i }
            if byte >= 0x80 { nonASCII = true }
            i += 1
        }
        let target = targetStart..<i
        // Raw UTF-8 in a target is tolerated (some clients send it); bytes that are not UTF-8 would be replaced
        // while decoding and name a different object than the client meant.
        if nonASCII && String(validating: UnsafeRawBufferPointer(rebasing: bytes[target]), as: UTF8.self) == nil {
            return .failure(Failure(status: 400, reason: "request target is not valid UTF-8"))
        }
        guard !target.isEmpty, i < line.upperBound else {
            return .failure(Failure(status: 400, reason: "bad request line"))
        }
        let version = (i + 1)..<line.upperBound
        let isHTTP10: Bool
        if equalsExactly(bytes, version, "HTTP/1.1") {
            isHTTP10 = false
        } else if equalsExactly(bytes, version, "HTTP/1.0") {
            isHTTP10 = true
        } else if version.count == 8, equalsExactly(bytes, version.lowerBound..<(version.lowerBound + 5), "HTTP/"),
            isDigit(bytes[version.lowerBound + 5]), bytes[version.lowerBound + 6] == 0x2E,
            isDigit(bytes[version.lowerBound + 7])
        {
            return .failure(Failure(status: 505, reason: "unsupported HTTP version"))
        } else {
            return .failure(Failure(status: 400, reason: "bad HTTP version"))
        }
        let rawPath = query >= 0 ? string(bytes, targetStart..<query) : string(bytes, target)
        let rawQuery = query >= 0 ? string(bytes, (query + 1)..<target.upperBound) : ""
        return .success(
            RequestLine(
                method: text(bytes, method, among: knownMethods), rawPath: rawPath, rawQuery: rawQuery,
                isHTTP10: isHTTP10))
    }

    /// The bytes as one of `literals` when they spell it exactly (no string made per request), else as a new string:
    /// for methods (HTTP's own) and field names (those clients send with most requests, spelled as they send them;
    /// names compare case-insensitively, so a name spelled otherwise is only made as it came).
    private static func text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, among literals: [Literal]) -> String
    {
        for known in literals where equalsExactly(bytes, range, known.bytes) { return known.text }
        return string(bytes, range)
    }

    private struct Literal {
        let bytes: StaticString
        let text: String
        init(_ literal: StaticString) {
            bytes = literal
            text = literal.description
        }
    }

    private static let knownMethods: [Literal] =
        (["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] as [StaticString]).map(Literal.init)

    private static let commonFieldNames: [Literal] =
        ([
            "Host", "host", "User-Agent", "user-agent", "Accept", "accept", "Accept-Encoding", "accept-encoding",
            "Connection", "connection", "Authorization", "authorization", "Content-Type", "content-type",
            "Content-Length", "content-length", "Range", "range", "X-Goog-Api-Client", "x-goog-api-client",
        ] as [StaticString]).map(Literal.init)

    /// Line feeds in `bytes[from..<to]`: an upper bound on the header fields.
    private static func countLines(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var count = 0
        var index = from
        while index < to, let lf = memchr(base + index, 0x0A, to - index) {
            count += 1
            index = base.distance(to: UnsafeRawPointer(lf)) + 1
        }
        return count
    }

    /// The next line before `end`, without its CR LF (or bare LF); advances `cursor` past the line break.
    private static func nextLine(_ bytes: UnsafeRawBufferPointer, _ cursor: inout Int, end: Int) -> Range<Int>? {
        guard cursor < end else { return nil }
        var i = cursor
        while i < end && bytes[i] != 0x0A { i += 1 }
        guard i < end else { return nil }
        var lineEnd = i
        if lineEnd > cursor && bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
        let line = cursor..<lineEnd
        cursor = i + 1
        // A CR elsewhere in the line is caught by the checks on names, targets and values (all refuse controls).
        return line
    }

    private static func parseContentLength(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int64? {
        guard !range.isEmpty, range.count <= 18 else { return nil }
        var value: Int64 = 0
        for i in range {
            guard isDigit(bytes[i]) else { return nil }
            value = value * 10 + Int64(bytes[i] - 0x30)
        }
        return value
    }

    /// Calls `body` with each non-empty comma-separated element, trimmed of spaces and tabs.
    private static func forEachToken(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ body: (Range<Int>) -> Void
    ) {
        var start = range.lowerBound
        while start <= range.upperBound {
            var stop = start
            while stop < range.upperBound && bytes[stop] != 0x2C { stop += 1 }
            var a = start
            var b = stop
            while a < b && (bytes[a] == 0x20 || bytes[a] == 0x09) { a += 1 }
            while b > a && (bytes[b - 1] == 0x20 || bytes[b - 1] == 0x09) { b -= 1 }
            if a < b { body(a..<b) }
            start = stop + 1
        }
    }

    private static func string(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// ASCII case-insensitive comparison with a lowercase literal.
    private static func equalsLowercase(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lower: StaticString)
        -> Bool
    {
        guard range.count == lower.utf8CodeUnitCount else { return false }
        let literal = lower.utf8Start
        for (k, i) in range.enumerated() {
            var byte = bytes[i]
            if byte >= 0x41 && byte <= 0x5A { byte += 32 }
            if byte != literal[k] { return false }
        }
        return true
    }

    private static func equalsExactly(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ literal: StaticString)
        -> Bool
    {
        guard range.count == literal.utf8CodeUnitCount, let base = bytes.baseAddress else { return false }
        return memcmp(base + range.lowerBound, literal.utf8Start, range.count) == 0
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isTokenByte(_ byte: UInt8) -> Bool { HTTPHeaders.isTokenByte(byte) }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
