import SiloCore

/// What arrives before the body: method, raw target, headers.
public struct HTTPRequestHead: Sendable {
    public var method: String
    /// The path exactly as sent, still percent-encoded (`/v0/b/x/o/a%2Fb`). Routes split it on `/` before decoding.
    public var rawPath: String
    /// The query string exactly as sent, without `?`; empty when absent.
    public var rawQuery: String
    public var headers: HTTPHeaders
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// Where the connection comes from, when the transport knows (for per-client quotas; never trusted as identity).
    public var peer: PeerAddress?
    /// The request came over TLS (the transport's own, not a proxy's): links and upload URLs use https.
    public var isSecure = false

    public init(
        method: String, rawPath: String, rawQuery: String = "", headers: HTTPHeaders = [:], version: String = "HTTP/1.1"
    ) {
        self.method = method
        self.rawPath = rawPath
        self.rawQuery = rawQuery
        self.headers = headers
        self.version = version
    }

    /// Splits a request target (`/path?query`) into path and query.
    public init(method: String, target: String, headers: HTTPHeaders = [:], version: String = "HTTP/1.1") {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            self.init(
                method: method, rawPath: String(target[..<q]),
                rawQuery: String(target[target.utf8.index(after: q)...]),
                headers: headers, version: version)
        } else {
            self.init(method: method, rawPath: target, headers: headers, version: version)
        }
    }

    /// Query parameters decoded form-style (`+` is a space), in order; duplicates kept. Nil when a name or value
    /// has a malformed escape or decodes to invalid UTF-8: such a query names nothing reliably (`?name=%FF` must not
    /// become an object called `%FF`), so the server refuses it.
    public var queryItems: [(name: String, value: String)]? {
        guard !rawQuery.isEmpty else { return [] }
        var query = rawQuery
        // One pass over the bytes: every request with a query (`alt=media`) parses it, and splitting it into
        // substrings first cost a few percent of a small GET's CPU. '&' and '=' are ASCII, so the pieces between
        // them are whole UTF-8 sequences.
        return query.withUTF8 { bytes -> [(name: String, value: String)]? in
            var items: [(name: String, value: String)] = []
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
                defer { start = end + 1 }
                guard end > start else { continue }
                let pair = UnsafeBufferPointer(rebasing: bytes[start..<end])
                let eq = pair.firstIndex(of: UInt8(ascii: "="))
                guard
                    let name = PercentCoding.decodeQueryComponent(
                        utf8: UnsafeBufferPointer(rebasing: pair[..<(eq ?? pair.endIndex)])),
                    let value = eq.map({
                        PercentCoding.decodeQueryComponent(utf8: UnsafeBufferPointer(rebasing: pair[($0 + 1)...]))
                    }) ?? ""
                else { return nil }
                items.append((name, value))
            }
            return items
        }
    }
}

/// Parsed query parameters with first-wins lookup.
public struct QueryParameters: Sendable {
    public let items: [(name: String, value: String)]

    /// Throws `.invalidArgument` for a query with a malformed escape or invalid UTF-8.
    public init(_ head: HTTPRequestHead) throws {
        guard let items = head.queryItems else {
            throw StorageError(
                .invalidArgument,
                "malformed percent-encoding or invalid UTF-8 in the query \(head.rawQuery.prefix(200))")
        }
        self.items = items
    }
    public subscript(name: String) -> String? { items.first { $0.name == name }?.value }
    /// Case-insensitive lookup, for parameters some clients spell differently (`ifMetaGenerationNotMatch`).
    public func ignoringCase(_ name: String) -> String? { items.first { equalsIgnoringCase($0.name, name) }?.value }
    public func contains(_ name: String) -> Bool { self[name] != nil }
}
