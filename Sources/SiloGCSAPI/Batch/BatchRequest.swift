import SiloCore
import SiloHTTP
import SiloServerKit

/// One call of a batch (`POST /batch/storage/v1`): a `multipart/mixed` part holding an embedded HTTP request.
struct BatchCall {
    /// The part's `Content-ID` without its angle brackets; nil when the part has none.
    var contentID: String?
    /// The embedded request, or why it cannot be run: that call alone answers 400, the others still run (the part's
    /// framing was sound, so nothing else is in doubt).
    var request: Result<EmbeddedRequest, StorageError>
}

/// An embedded request as the part spelled it, every field already checked: a token for the method and for each
/// header name, a field value without CR, LF, NUL or another control for each header value, visible ASCII for the
/// target. Nothing in it can reach a response head or a log line unchecked.
struct EmbeddedRequest {
    var method: String
    /// The origin-form target (`/storage/v1/b/x/o/y?z=1`).
    var target: String
    /// The authority of an absolute-form target (`http://host:port/storage/v1/…`, as google-cloud-storage sends).
    var authority: String?
    var version: String
    /// The headers as sent, less the framing and hop-by-hop ones, plus a `Content-Length` for `body`.
    var headers: HTTPHeaders
    var body: [UInt8]
}

/// Parses a batch body: `multipart/mixed`, each part `Content-Type: application/http` with an optional `Content-ID`,
/// a blank line, then an HTTP/1.1 request (request line, headers, blank line, body). As liberal as GCS's frontend and
/// the clients need: CRLF or bare LF (google-cloud-storage's email generator and gcsfs frame with LF), a preamble and
/// an epilogue, transport padding after a delimiter, a last part without the closing delimiter, headers that end at
/// the end of the part with no blank line (gcsfs's deletes), and absolute-form request targets. Pure: whole body in,
/// calls out; the body was bounded before it got here.
enum BatchRequest {
    /// The most header fields one embedded request may carry.
    static let maxHeaderFields = 100
    /// The longest request target accepted in an embedded request line.
    static let maxTargetBytes = 16 << 10

    /// Throws `.invalidArgument` (the whole batch answers 400) when the body has no delimiter or no part, or more than
    /// `maxCalls` parts.
    static func parse(_ body: [UInt8], boundary: String, maxCalls: Int) throws -> [BatchCall] {
        let dashBoundary = Array("--\(boundary)".utf8)
        let delimiter = [lf] + dashBoundary

        /// What follows `--boundary` at `position` in a real delimiter: `--` (the close), or transport padding and a
        /// line end (then a part starts after it), or the end of the body. Nil for text that only starts like one.
        func afterBoundary(_ position: Int) -> (next: Int, close: Bool)? {
            var p = position
            if body.count - p >= 2 && body[p] == dash && body[p + 1] == dash { return (p + 2, true) }
            while p < body.count && (body[p] == space || body[p] == tab) { p += 1 }
            if p < body.count && body[p] == cr { p += 1 }
            if p == body.count { return (p, true) }
            return body[p] == lf ? (p + 1, false) : nil
        }
        /// The next real delimiter at or after `from`: where its LF is, and what follows it.
        func nextDelimiter(from: Int) -> (at: Int, after: (next: Int, close: Bool))? {
            var search = from
            while let at = find(delimiter, in: body, from: search) {
                if let after = afterBoundary(at + delimiter.count) { return (at, after) }
                search = at + 1
            }
            return nil
        }

        var cursor: (next: Int, close: Bool)
        if body.starts(with: dashBoundary), let first = afterBoundary(dashBoundary.count) {
            cursor = first
        } else if let first = nextDelimiter(from: 0) {
            cursor = first.after
        } else {
            throw StorageError(.invalidArgument, "the batch body has no part delimited by its boundary")
        }
        var calls: [BatchCall] = []
        while !cursor.close {
            let partStart = cursor.next
            // Searched from the LF that ended the delimiter line, so an empty part is one too.
            let found = nextDelimiter(from: partStart - 1)
            var partEnd = found?.at ?? body.count
            if found == nil {
                // No closing delimiter: the last part runs to the end, less the line end before where it would be.
                if partEnd > partStart && body[partEnd - 1] == lf { partEnd -= 1 }
            }
            // The CR of a CRLF before the delimiter is framing, not the part's.
            if partEnd > partStart && body[partEnd - 1] == cr { partEnd -= 1 }
            guard calls.count < maxCalls else {
                throw StorageError(
                    .invalidArgument, "A batch request may hold at most \(maxCalls) calls; this one holds more.")
            }
            calls.append(part(body[partStart..<max(partStart, partEnd)]))
            guard let found else { break }
            cursor = found.after
        }
        guard !calls.isEmpty else { throw StorageError(.invalidArgument, "the batch request holds no call") }
        return calls
    }

    /// One part: its MIME headers, then the embedded request. A malformed part is that call's 400.
    private static func part(_ bytes: ArraySlice<UInt8>) -> BatchCall {
        var lines = Lines(bytes)
        var contentID: String?
        var contentType: String?
        var sawBlankLine = false
        do {
            while let line = lines.next() {
                if line.isEmpty {
                    sawBlankLine = true
                    break
                }
                let (name, value) = try field(line, in: "a batch part's headers")
                if equalsIgnoringCase(name, "Content-ID") {
                    var id = Substring(value)
                    if id.hasPrefix("<") && id.hasSuffix(">") && id.count >= 2 { id = id.dropFirst().dropLast() }
                    contentID = String(id)
                } else if equalsIgnoringCase(name, "Content-Type") {
                    contentType = value
                }
            }
        } catch {
            return BatchCall(contentID: contentID, request: .failure(StorageError.wrap(error)))
        }
        if let contentType, !equalsIgnoringCase(mediaType(contentType), "application/http") {
            let error = StorageError(
                .invalidArgument, "a batch part must be application/http, not \(contentType.prefix(100))")
            return BatchCall(contentID: contentID, request: .failure(error))
        }
        guard sawBlankLine else {
            let error = StorageError(.invalidArgument, "a batch part has no blank line before its embedded request")
            return BatchCall(contentID: contentID, request: .failure(error))
        }
        return BatchCall(
            contentID: contentID, request: Result { try embedded(bytes[lines.position...]) }.mapError(StorageError.wrap)
        )
    }

    /// The embedded HTTP request: request line, headers up to a blank line (or the part's end), body.
    private static func embedded(_ bytes: ArraySlice<UInt8>) throws -> EmbeddedRequest {
        var lines = Lines(bytes)
        // RFC 9112 §2.2: empty lines before a request line are ignored.
        var requestLine = lines.next()
        while let line = requestLine, line.isEmpty { requestLine = lines.next() }
        guard let requestLine else { throw StorageError(.invalidArgument, "a batch part holds no request") }
        var (method, target, version) = try self.requestLine(requestLine)
        var authority: String?
        if let (host, path) = splitAbsoluteForm(target) {
            authority = host
            target = path
        }
        guard target.hasPrefix("/") else {
            throw StorageError(
                .invalidArgument, "the request target \(target.prefix(200)) of a batch call is not a path")
        }
        var headers = HTTPHeaders()
        var declaredLength: Int?
        while let line = lines.next() {
            if line.isEmpty { break }
            if line.first == space || line.first == tab {
                throw StorageError(.invalidArgument, "a batch call's header is folded over two lines")
            }
            let (name, value) = try field(line, in: "a batch call's headers")
            guard headers.fields.count < maxHeaderFields else {
                throw StorageError(.invalidArgument, "a batch call has more than \(maxHeaderFields) header fields")
            }
            switch name.lowercased() {
            case "content-length":
                guard !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    let length = Int(value), declaredLength == nil || declaredLength == length
                else {
                    throw StorageError(.invalidArgument, "a batch call's Content-Length is not one number")
                }
                declaredLength = length
            case "transfer-encoding":
                guard equalsIgnoringCase(value, "identity") else {
                    throw StorageError(.invalidArgument, "a batch call's body cannot be chunked")
                }
            case "connection", "keep-alive", "te", "upgrade", "expect", "proxy-connection":
                continue  // hop-by-hop: about the outer connection, if anything
            default:
                headers.add(name, value)
            }
        }
        var body = Array(bytes[lines.position...])
        if let declaredLength {
            guard declaredLength <= body.count else {
                throw StorageError(
                    .invalidArgument,
                    "a batch call declares a \(declaredLength)-byte body and its part holds \(body.count) bytes")
            }
            body.removeLast(body.count - declaredLength)
        }
        headers.add("Content-Length", String(body.count))
        return EmbeddedRequest(
            method: method, target: target, authority: authority, version: version, headers: headers, body: body)
    }

    /// `METHOD SP target SP HTTP/1.x`; the version may be left out (HTTP/1.1).
    private static func requestLine(_ line: ArraySlice<UInt8>) throws -> (String, String, String) {
        let words = line.split(separator: space, omittingEmptySubsequences: true)
        guard words.count == 2 || words.count == 3 else {
            throw StorageError(.invalidArgument, "a batch call's request line is not METHOD target HTTP/1.1")
        }
        guard words[0].count <= 32, words[0].allSatisfy(HTTPHeaders.isTokenByte) else {
            throw StorageError(.invalidArgument, "a batch call's method is not a token")
        }
        guard words[1].count <= maxTargetBytes, words[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw StorageError(
                .invalidArgument,
                "a batch call's request target is not visible ASCII of at most \(maxTargetBytes) bytes")
        }
        let version = words.count == 3 ? String(decoding: words[2], as: UTF8.self) : "HTTP/1.1"
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            throw StorageError(.invalidArgument, "a batch call's request line names no HTTP/1.x version")
        }
        // Both are ASCII by the checks above.
        return (String(decoding: words[0], as: UTF8.self), String(decoding: words[1], as: UTF8.self), version)
    }

    /// `http[s]://authority/path?query` → (authority, `/path?query`); nil for any other form.
    private static func splitAbsoluteForm(_ target: String) -> (String, String)? {
        let lower = target.prefix(8).lowercased()
        let schemeLength = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
        guard schemeLength > 0 else { return nil }
        let rest = target.utf8.dropFirst(schemeLength)
        let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        // Cut at ASCII bytes, so these are valid String indices.
        let authority = String(target[rest.startIndex..<end])
        var path = String(target[end...])
        if !path.hasPrefix("/") { path = "/" + path }
        return authority.isEmpty ? nil : (authority, path)
    }

    /// `Name: value` with a token for a name and a valid field value (trimmed of SP and HTAB).
    private static func field(_ line: ArraySlice<UInt8>, in place: String) throws -> (String, String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
            line[..<colon].allSatisfy(HTTPHeaders.isTokenByte)
        else {
            throw StorageError(.invalidArgument, "a line in \(place) is not a header field")
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == space || first == tab { value.removeFirst() }
        while let last = value.last, last == space || last == tab { value.removeLast() }
        guard let text = String(validating: value, as: UTF8.self), FieldText.isValid(text),
            text.utf8.count <= FieldText.maxBytes
        else {
            throw StorageError(
                .invalidArgument, "a header value in \(place) holds a control character, invalid UTF-8, or is too long")
        }
        return (String(decoding: line[..<colon], as: UTF8.self), text)
    }

    /// `type/subtype` of a `Content-Type` value, without parameters.
    private static func mediaType(_ value: String) -> Substring {
        let end = value.firstIndex(of: ";") ?? value.endIndex
        var type = value[..<end]
        while type.last == " " || type.last == "\t" { type.removeLast() }
        return type
    }

    /// Offset of the first `needle` at or after `from`.
    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard from < haystack.count else { return nil }
        return haystack.withUnsafeBytes { all in
            let tail = UnsafeRawBufferPointer(rebasing: all[from...])
            return MultipartParser.firstDelimiter(needle, in: tail).map { $0 + from }
        }
    }

    private static let lf = UInt8(ascii: "\n")
    private static let cr = UInt8(ascii: "\r")
    private static let dash = UInt8(ascii: "-")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
}

/// Lines of a byte slice, ended by LF or CRLF (the CR dropped); `position` is where the unread rest begins.
private struct Lines {
    let bytes: ArraySlice<UInt8>
    private(set) var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    mutating func next() -> ArraySlice<UInt8>? {
        guard position < bytes.endIndex else { return nil }
        let end = bytes[position...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
        var line = bytes[position..<end]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        position = end == bytes.endIndex ? end : end + 1
        return line
    }
}
