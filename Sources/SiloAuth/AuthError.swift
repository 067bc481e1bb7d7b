public import SiloCore

/// The one error type of SiloAuth: why a credential was refused, or why auth configuration could not be loaded.
///
/// The message names the problem (the claim, the key id, the file) and never contains the token, a secret or an
/// admin key, so the error can be logged and returned to the client as is. Every code except
/// ``Code-swift.struct/invalidConfiguration`` means "this request is not authenticated": HTTP 401.
public struct AuthError: ChainedError {
    /// An extensible set of codes (a struct over a private enum, so adding one is not a breaking change).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Sendable {
            case malformedToken, unsupportedScheme, unsupportedAlgorithm, unsignedToken, unknownKey, badSignature
            case expired, notYetValid, wrongAudience, wrongIssuer, invalidSubject, invalidClaims
            case invalidScope, invalidConfiguration
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }
        public var description: String { wrapped.rawValue }

        /// Not three base64url segments of JSON, or a header without the fields a JWT needs.
        public static let malformedToken = Code(.malformedToken)
        /// An `Authorization` scheme other than `Firebase` or `Bearer`.
        public static let unsupportedScheme = Code(.unsupportedScheme)
        /// An `alg` this verifier has no key for (or does not know at all).
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// `alg: none` outside emulator mode.
        public static let unsignedToken = Code(.unsignedToken)
        /// No `kid`, or a `kid` the key set does not hold.
        public static let unknownKey = Code(.unknownKey)
        public static let badSignature = Code(.badSignature)
        public static let expired = Code(.expired)
        /// `iat`, `nbf` or `auth_time` lies in the future beyond the allowed clock skew.
        public static let notYetValid = Code(.notYetValid)
        public static let wrongAudience = Code(.wrongAudience)
        public static let wrongIssuer = Code(.wrongIssuer)
        /// `sub` missing, empty, not a string or longer than 128 characters.
        public static let invalidSubject = Code(.invalidSubject)
        /// A required time claim missing or not a number; reserved or oversized claims when minting.
        public static let invalidClaims = Code(.invalidClaims)
        /// A token request whose `scope` names no Cloud Storage scope.
        public static let invalidScope = Code(.invalidScope)
        /// A key, secret or admin-key file that cannot be read or parsed. A startup or reload error, not a 401.
        public static let invalidConfiguration = Code(.invalidConfiguration)
    }

    public var code: Code
    /// Human text naming the problem; never the token, a secret or a key.
    public var message: String
    public var cause: (any Error & Sendable)?
    public var file: String
    public var line: Int
    /// For a refused signed URL or POST policy: the query parameter or form field at fault, and what the server
    /// computed and checked the signature against (GCS shows both in its XML error). Derived from the request and
    /// never secret: the signature itself is not part of either.
    public var signedRequest: SignedRequestDiagnosis?

    public init(
        _ code: Code, _ message: String, cause: (any Error & Sendable)? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.file = file
        self.line = line
    }

    /// The status a server answers with: 401 for a refused credential, 500 for broken configuration.
    public var httpStatus: Int { code == .invalidConfiguration ? 500 : 401 }
}

/// What a signed-URL refusal can show the client about the request it checked.
public struct SignedRequestDiagnosis: Sendable {
    public var parameter: String?
    public var stringToSign: String?
    public var canonicalRequest: String?

    public init(parameter: String? = nil, stringToSign: String? = nil, canonicalRequest: String? = nil) {
        self.parameter = parameter
        self.stringToSign = stringToSign
        self.canonicalRequest = canonicalRequest
    }
}
