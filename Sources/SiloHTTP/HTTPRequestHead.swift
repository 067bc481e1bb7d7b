import SiloCore

/// What arrives before the body: method, raw target, headers.
///
/// Its fields live in one ``CopyOnWrite`` storage: the head is copied along every step of a request (into the
/// context, the route's work, the answer's bookkeeping), and copied field by field that was a dozen retains and
/// releases each time (callgrind, `bench/instructions.sh get`). Mutation copies the fields first when they are
/// shared, so it keeps value semantics.
public struct HTTPRequestHead: Sendable {
    private struct Values {
        var method: String
        var rawPath: String
        var rawQuery: String
        var headers: HTTPHeaders
        var version: String
        var peer: PeerAddress?
        var local: LocalEndpoint?
        var isSecure: Bool
        var wantsReplayPermit = false
    }

    private var storage: CopyOnWrite<Values>

    public var method: String {
        _read { yield storage.values.method }
        _modify { yield &storage.values.method }
    }
    /// The path exactly as sent, still percent-encoded (`/v0/b/x/o/a%2Fb`). Routes split it on `/` before decoding.
    public var rawPath: String {
        _read { yield storage.values.rawPath }
        _modify { yield &storage.values.rawPath }
    }
    /// The query string exactly as sent, without `?`; empty when absent.
    public var rawQuery: String {
        _read { yield storage.values.rawQuery }
        _modify { yield &storage.values.rawQuery }
    }
    public var headers: HTTPHeaders {
        _read { yield storage.values.headers }
        _modify { yield &storage.values.headers }
    }
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String {
        _read { yield storage.values.version }
        _modify { yield &storage.values.version }
    }
    /// Where the connection comes from, when the transport knows (for per-client quotas; never trusted as identity).
    public var peer: PeerAddress? {
        _read { yield storage.values.peer }
        _modify { yield &storage.values.peer }
    }
    /// The address and port the connection reached on this server, when the transport knows: what the request's
    /// `Host` must name for the server to take it as naming itself (signed URLs, token audiences).
    public var local: LocalEndpoint? {
        _read { yield storage.values.local }
        _modify { yield &storage.values.local }
    }
    /// The request came over TLS (the transport's own, not a proxy's): links and upload URLs use https.
    public var isSecure: Bool {
        _read { yield storage.values.isSecure }
        _modify { yield &storage.values.isSecure }
    }
    /// Set by a transport that would keep a replayable answer to this head (``ReplayPermit``): it has answered the
    /// same bytes before. A handler makes a permit only then; false everywhere else.
    public var wantsReplayPermit: Bool {
        _read { yield storage.values.wantsReplayPermit }
        _modify { yield &storage.values.wantsReplayPermit }
    }

    public init(
        method: String, rawPath: String, rawQuery: String = "", headers: HTTPHeaders = [:],
        version: String = "HTTP/1.1", peer: PeerAddress? = nil, local: LocalEndpoint? = nil, isSecure: Bool = false
    ) {
        storage = CopyOnWrite(
            Values(
                method: method, rawPath: rawPath, rawQuery: rawQuery, headers: headers, version: version, peer: peer,
                local: local, isSecure: isSecure))
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
            // Sized once: a query of a few parameters grew the array two or three times.
            items.reserveCapacity(bytes.reduce(1) { $1 == UInt8(ascii: "&") ? $0 + 1 : $0 })
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
    public subscript(name: String) -> String? {
        for index in items.indices where items[index].name == name { return items[index].value }
        return nil
    }
    /// Case-insensitive lookup, for parameters some clients spell differently (`ifMetaGenerationNotMatch`).
    public func ignoringCase(_ name: String) -> String? { items.first { equalsIgnoringCase($0.name, name) }?.value }
    public func contains(_ name: String) -> Bool { self[name] != nil }
}
