package import SiloCore
package import SiloHTTP

/// A live version an access decision read, and granted on by that version's own ACL.
package struct DecidedVersion: Equatable, Sendable {
    var bucket: BucketName
    var name: ObjectName
    var generation: Int64

    package init(bucket: BucketName, name: ObjectName, generation: Int64) {
        self.bucket = bucket
        self.name = name
        self.generation = generation
    }
}

/// What every route needs to know about the request in front of it.
package struct RequestContext {
    package let head: HTTPRequestHead
    package let query: QueryParameters
    package let principal: Principal?
    package let time: Timestamp
    /// The live versions the GCS access decision granted by their own ACL alone (SiloGCSAPI's `GCSAccess.Decision`): the
    /// handler reads or changes exactly those (``addressed(_:_:named:)``), never a version that replaced one meanwhile.
    package var decided: [DecidedVersion] = []

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
        // The transport refuses these before the handler (RFC 9112 §6.3); checked again here because the in-process
        // harness and a batch call's inner heads reach the handler without it.
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

    package var method: String { head.method }

    /// The generation a handler reads or changes: the one the request names, else the live one the access decision
    /// read when that version's own ACL was what granted it, else nil (the live one: the bucket's grants cover every
    /// version).
    package func addressed(_ bucket: BucketName, _ name: ObjectName, named generation: Int64?) -> Int64? {
        generation ?? decided.first { $0.bucket == bucket && $0.name == name }?.generation
    }

    /// The error for a version the access decision pinned that is gone by the time the handler reaches it: the
    /// object changed under the request, which a retry decides again (503, never a 404 for an object that exists).
    package func changed(_ bucket: BucketName, _ name: ObjectName, named generation: Int64?, _ error: any Error)
        -> any Error
    {
        guard generation == nil, addressed(bucket, name, named: nil) != nil,
            (error as? StorageError)?.code == .notFound
        else { return error }
        return StorageError(.unavailable, "\(bucket)/\(name) changed while this request was decided; try again")
    }

    /// The body's length when the request declares it (`Content-Length`); nil for a chunked body.
    package var declaredBodyLength: Int64? {
        head.headers["Content-Length"].flatMap { Int64($0) }
    }
    package var headers: HTTPHeaders { head.headers }
}
