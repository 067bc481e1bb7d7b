/// Who is calling, as far as the credential says.
public struct Principal: Sendable, Equatable {
    /// `Firebase` or `Bearer`.
    public var scheme: String
    /// The credential exactly as sent (kept for resumable sessions, never logged).
    public var credential: String
    /// `user_id` (emulator tokens) or `sub` of a JWT; nil for non-JWT credentials.
    public var uid: String?
    /// The JWT claims as JSON text (`{}` when there are none).
    public var claimsJSON: String
    /// Admin credentials bypass access rules (`owner` in emulator mode, admin keys otherwise).
    public var isAdmin: Bool
    /// Whether the token's signature was checked (false for emulator tokens and emulator-mode `owner`).
    public var verified: Bool
    /// Set when the caller is a registered Google service account (an access token from Silo's token endpoint, or
    /// a signed URL or POST policy signed with its key): bucket IAM policies and ACLs decide what it may do.
    public var serviceAccount: ServiceAccountCaller?

    public init(
        scheme: String, credential: String, uid: String?, claimsJSON: String, isAdmin: Bool, verified: Bool,
        serviceAccount: ServiceAccountCaller? = nil
    ) {
        self.scheme = scheme
        self.credential = credential
        self.uid = uid
        self.claimsJSON = claimsJSON
        self.isAdmin = isAdmin
        self.verified = verified
        self.serviceAccount = serviceAccount
    }
}

/// A service account acting as the caller.
public struct ServiceAccountCaller: Sendable, Equatable {
    /// How the request proved it speaks for the account.
    public enum Credential: String, Sendable {
        /// `Authorization: Bearer` with an access token from Silo's token endpoint.
        case accessToken
        /// `Authorization: Bearer` with a JWT the account signed itself (AIP-4111; Rust's object_store).
        case selfSignedJWT
        /// A V4 or V2 signed URL signed with the account's key.
        case signedURL
        /// A POST policy signed with the account's key.
        case postPolicy
    }

    /// `client_email` of the account's key.
    public var email: String
    /// The OAuth scopes of the access token or self-signed JWT (they cap what IAM grants: `devstorage.read_only`
    /// allows only reads); a signed URL or policy carries none and is capped by IAM alone.
    public var scopes: [String]
    public var credential: Credential

    public init(email: String, scopes: [String], credential: Credential) {
        self.email = email
        self.scopes = scopes
        self.credential = credential
    }
}

/// One access decision's input: the storage operation, the path, the caller, and the object before and after.
public struct AccessRequest: Sendable {
    public enum Operation: String, Sendable {
        case get, list, create, update, delete
    }

    public var operation: Operation
    public var bucket: BucketName
    /// The object name, or for `list` the prefix without its trailing `/`.
    public var path: String
    public var principal: Principal?
    /// The object as it is (`resource` in rules); nil when it does not exist.
    public var resource: ObjectRecord?
    /// The object as it would be after a write (`request.resource`): fields and size.
    public var proposedFields: ObjectFields?
    public var proposedSize: Int64?
    /// Size and checksums of the bytes an upload would store (`request.resource.md5Hash` and `crc32c`).
    public var proposedBlob: BlobSummary?
    public var time: Timestamp
    /// False when an upload is decided before its bytes arrive (access is checked before the first byte is
    /// stored). Then what only the bytes tell — checksums, and the size when none was declared — is unknown; a
    /// policy must not deny because of it (the upload is decided again, with the bytes, before it commits), but
    /// must deny whatever is denied whatever those values turn out to be.
    public var bytesKnown = true

    public init(
        operation: Operation, bucket: BucketName, path: String, principal: Principal?, resource: ObjectRecord? = nil,
        proposedFields: ObjectFields? = nil, proposedSize: Int64? = nil, proposedBlob: BlobSummary? = nil,
        time: Timestamp
    ) {
        self.operation = operation
        self.bucket = bucket
        self.path = path
        self.principal = principal
        self.resource = resource
        self.proposedFields = proposedFields
        self.proposedSize = proposedSize ?? proposedBlob?.size
        self.proposedBlob = proposedBlob
        self.time = time
    }
}

/// Decides whether a request may proceed. The rules engine implements this; so does allow-all.
public protocol AccessPolicy: Sendable {
    func allows(_ request: AccessRequest) -> Bool
}

/// Allows everything, as the Firebase emulator does with open rules. Only for loopback or explicit opt-in.
public struct AllowAllPolicy: AccessPolicy {
    public init() {}
    public func allows(_ request: AccessRequest) -> Bool { true }
}
