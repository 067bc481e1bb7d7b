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
        var items: [(name: String, value: String)] = []
        for bytes in rawQuery.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            // '&' and '=' are ASCII, so these UTF-8 indices are valid String indices.
            let pair = rawQuery[bytes.startIndex..<bytes.endIndex]
            let eq = pair.utf8.firstIndex(of: UInt8(ascii: "="))
            guard let name = PercentCoding.decodeQueryComponent(pair[..<(eq ?? pair.endIndex)]),
                // Past '=' by its UTF-8 index: `index(after:)` steps over a whole Character, and a combining mark
                // right after '=' would go with it.
                let value = eq.map({ PercentCoding.decodeQueryComponent(pair[pair.utf8.index(after: $0)...]) }) ?? ""
            else { return nil }
            items.append((name, value))
        }
        return items
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
