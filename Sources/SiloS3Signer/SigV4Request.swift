/// One query parameter, unencoded.
public struct SigV4QueryItem: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String = "") {
        self.name = name
        self.value = value
    }
}

/// One header to send and sign.
public struct SigV4Header: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// The parts of an HTTP request that SigV4 signs, all unencoded: the signer encodes them exactly as they must go
/// on the wire, so what is sent and what is signed cannot drift apart (use ``encodedPathAndQuery``).
public struct SigV4Request: Sendable, Equatable {
    public var method: String
    /// The `Host` header as the client will send it: the URL's authority, with the port when it is not the default.
    public var host: String
    /// The absolute path, unencoded, e.g. `/bucket/key with spaces`. S3 paths are not normalised.
    public var path: String
    public var query: [SigV4QueryItem]
    /// Headers to sign besides `host` and the `x-amz-*` headers the signer adds (e.g. `range`, `content-md5`).
    public var headers: [SigV4Header]

    public init(
        method: String, host: String, path: String, query: [SigV4QueryItem] = [], headers: [SigV4Header] = []
    ) {
        self.method = method
        self.host = host
        self.path = path
        self.query = query
        self.headers = headers
    }

    /// The request target to put in the URL after the authority: the encoded path, and `?` plus the canonical
    /// query string when there is one.
    public var encodedPathAndQuery: String {
        let query = SigV4Encoding.canonicalQuery(query)
        return SigV4Encoding.path(path) + (query.isEmpty ? "" : "?" + query)
    }
}

/// What the request body's hash is declared as (`x-amz-content-sha256`).
public enum SigV4Payload: Sendable, Equatable {
    /// `UNSIGNED-PAYLOAD`: the body is not hashed (it is still covered by TLS, or by Content-MD5 where sent).
    case unsigned
    /// The lowercase hex SHA-256 of the body.
    case sha256(hex: String)

    /// The hex SHA-256 of an empty body.
    public static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public var headerValue: String {
        switch self {
        case .unsigned: "UNSIGNED-PAYLOAD"
        case .sha256(let hex): hex
        }
    }
}
