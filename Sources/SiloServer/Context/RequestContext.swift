import SiloCore
import SiloHTTP

/// What every route needs to know about the request in front of it.
struct RequestContext {
    let head: HTTPRequestHead
    let query: QueryParameters
    let principal: Principal?
    let time: Timestamp
    /// The peer is a trusted proxy (``EdgePolicy/trustsForwarding(_:)``): its `X-Forwarded-*` count for links.
    let forwarded: Bool

    /// Throws `.unauthenticated` when the request carries a credential that is not acceptable, `.invalidArgument`
    /// for a malformed query or an ambiguous head (two `Authorization` or `Host` fields, none on HTTP/1.1). With
    /// `signedURLs` (the XML API), a signed URL's signer is the principal, and a URL that does not verify is refused
    /// here, before any route sees the request (``SignedURLGate``), against the hosts `edge` takes for this server's.
    init(head: HTTPRequestHead, credentials: any CredentialVerifier, edge: EdgePolicy, signedURLs: Bool = false) throws
    {
        let time = Timestamp.now()
        try Self.checkUnambiguous(head)
        self.head = head
        self.query = try TargetMemo.query(head)
        self.forwarded = edge.trustsForwarding(head)
        if signedURLs, let signed = try SignedURLGate.signer(head, query, credentials, edge: edge, at: time) {
            self.principal = signed.principal
        } else {
            self.principal = try credentials.authenticate(authorizationHeader: head.headers["Authorization"], at: time)
        }
        self.time = time
    }

    /// Fields whose repetition makes a request mean two things: which credential, which host (RFC 9112 §3.2: a
    /// request with no Host, or several, is a 400). Checked here so both transports refuse the same heads.
    private static func checkUnambiguous(_ head: HTTPRequestHead) throws {
        var authorization = 0
        var host = 0
        var lengths: Set<String> = []
        var transferEncoding = false
        for field in head.headers {
            switch field.name.utf8.count {
            case 4 where equalsIgnoringCase(field.name, "Host"): host += 1
            case 13 where equalsIgnoringCase(field.name, "Authorization"): authorization += 1
            case 14 where equalsIgnoringCase(field.name, "Content-Length"): lengths.insert(field.value)
            case 17 where equalsIgnoringCase(field.name, "Transfer-Encoding"): transferEncoding = true
            default: continue
            }
        }
        // The epoll transport refuses these before the handler; libmicrohttpd lets them through (RFC 9112 §6.3).
        guard lengths.count <= 1 && !(transferEncoding && !lengths.isEmpty) else {
            throw StorageError(.invalidArgument, "the request's body length is framed two ways")
        }
        guard authorization <= 1 else {
            throw StorageError(.invalidArgument, "the request has more than one Authorization header")
        }
        guard host == 1 || (host == 0 && head.version == "HTTP/1.0") else {
            throw StorageError(
                .invalidArgument, host == 0 ? "an HTTP/1.1 request needs a Host header" : "more than one Host header")
        }
    }

    var method: String { head.method }

    /// The body's length when the request declares it (`Content-Length`); nil for a chunked body.
    var declaredBodyLength: Int64? {
        head.headers["Content-Length"].flatMap { Int64($0) }
    }
    var headers: HTTPHeaders { head.headers }

    /// `scheme://host[:port]` as the client addressed us: upload URLs and links must use the client's view of the
    /// host (`10.0.2.2` from the Android emulator, a service name in Docker), never the bind address. Behind a
    /// trusted proxy (`--trusted-proxies`), as the proxy says the client addressed it; anyone else's
    /// `X-Forwarded-*` is ignored.
    var externalBase: String {
        // Served over Silo's own TLS: https, whatever a forwarded X-Forwarded-Proto claims.
        let proxied = forwarded ? headers["X-Forwarded-Proto"].map(Self.firstListed) : nil
        let scheme =
            head.isSecure ? "https" : proxied.map { equalsIgnoringCase($0, "https") ? "https" : "http" } ?? "http"
        let host =
            (forwarded ? headers["X-Forwarded-Host"].map(Self.firstListed) : nil) ?? headers["Host"] ?? "127.0.0.1"
        return "\(scheme)://\(host)"
    }

    /// The first of a list a chain of proxies built (`a, b`): the one the client's request arrived with.
    private static func firstListed(_ value: String) -> String {
        var first = value.split(separator: ",", maxSplits: 1).first ?? ""
        while first.first == " " || first.first == "\t" { first = first.dropFirst() }
        while first.last == " " || first.last == "\t" { first = first.dropLast() }
        return String(first)
    }
}
