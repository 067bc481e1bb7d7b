import SiloCore
import SiloHTTP

/// What every route needs to know about the request in front of it.
struct RequestContext {
    let head: HTTPRequestHead
    let query: QueryParameters
    let principal: Principal?
    let time: Timestamp

    /// Throws `.unauthenticated` when the request carries a credential that is not acceptable.
    init(head: HTTPRequestHead, credentials: any CredentialVerifier) throws {
        let time = Timestamp.now()
        self.head = head
        self.query = QueryParameters(head)
        self.principal = try credentials.authenticate(authorizationHeader: head.headers["Authorization"], at: time)
        self.time = time
    }

    var method: String { head.method }

    /// The body's length when the request declares it (`Content-Length`); nil for a chunked body.
    var declaredBodyLength: Int64? {
        head.headers["Content-Length"].flatMap { Int64($0) }
    }
    var headers: HTTPHeaders { head.headers }

    /// `scheme://host[:port]` as the client addressed us: upload URLs and links must use the client's view of the
    /// host (`10.0.2.2` from the Android emulator, a service name in Docker), never the bind address.
    var externalBase: String {
        let scheme = headers["X-Forwarded-Proto"].map { equalsIgnoringCase($0, "https") ? "https" : "http" } ?? "http"
        let host = headers["X-Forwarded-Host"] ?? headers["Host"] ?? "127.0.0.1"
        return "\(scheme)://\(host)"
    }
}
