/// Who is calling, as far as the credential says.
///
/// Its fields live in one ``CopyOnWrite`` storage: a principal (or its absence, for an anonymous request) is copied
/// into the request's context and into every access decision, and its strings were a dozen retains, releases and
/// a wide `Optional` copy each time.
public struct Principal: Sendable, Equatable {
    private struct Values: Sendable, Equatable {
        var scheme: String
        var credential: String
        var uid: String?
        var claimsJSON: String
        var isAdmin: Bool
        var verified: Bool
        var serviceAccount: ServiceAccountCaller?
    }

    private var storage: CopyOnWrite<Values>

    /// `Firebase` or `Bearer`.
    public var scheme: String {
        _read { yield storage.values.scheme }
        _modify { yield &storage.values.scheme }
    }
    /// The credential exactly as sent, for this request only: never logged, never stored (an upload session keeps
    /// the principal without it, ``UploadSession/starter``).
    public var credential: String {
        _read { yield storage.values.credential }
        _modify { yield &storage.values.credential }
    }
    /// `user_id` (emulator tokens) or `sub` of a JWT; nil for non-JWT credentials.
    public var uid: String? {
        _read { yield storage.values.uid }
        _modify { yield &storage.values.uid }
    }
    /// The JWT claims as JSON text (`{}` when there are none).
    public var claimsJSON: String {
        _read { yield storage.values.claimsJSON }
        _modify { yield &storage.values.claimsJSON }
    }
    /// Admin credentials bypass access rules (`owner` in emulator mode, admin keys otherwise).
    public var isAdmin: Bool {
        _read { yield storage.values.isAdmin }
        _modify { yield &storage.values.isAdmin }
    }
    /// Whether the token's signature was checked (false for emulator tokens and emulator-mode `owner`).
    public var verified: Bool {
        _read { yield storage.values.verified }
        _modify { yield &storage.values.verified }
    }
    /// Set when the caller is a registered Google service account (an access token from Silo's token endpoint, or
    /// a signed URL or POST policy signed with its key): bucket IAM policies and ACLs decide what it may do.
    public var serviceAccount: ServiceAccountCaller? {
        _read { yield storage.values.serviceAccount }
        _modify { yield &storage.values.serviceAccount }
    }

    public init(
        scheme: String, credential: String, uid: String?, claimsJSON: String, isAdmin: Bool, verified: Bool,
        serviceAccount: ServiceAccountCaller? = nil
    ) {
        storage = CopyOnWrite(
            Values(
                scheme: scheme, credential: credential, uid: uid, claimsJSON: claimsJSON, isAdmin: isAdmin,
                verified: verified, serviceAccount: serviceAccount))
    }

    public static func == (a: Principal, b: Principal) -> Bool {
        a.storage.sharesStorage(with: b.storage) || a.storage.values == b.storage.values
    }
}

/// A service account acting as the caller.
public struct ServiceAccountCaller: Sendable, Equatable {
    /// How the request proved it speaks for the account.
    public enum Credential: String, Sendable, Codable {
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
///
/// Its fields live in one ``CopyOnWrite`` storage: the proposed fields alone are a few hundred bytes inline, copied
/// (even when absent) at each of the several hands a decision passes through.
public struct AccessRequest: Sendable {
    public enum Operation: String, Sendable {
        case get, list, create, update, delete
    }

    private struct Values: Sendable {
        var operation: Operation
        var bucket: BucketName
        var path: String
        var principal: Principal?
        var resource: ObjectRecord?
        var proposedFields: ObjectFields?
        var proposedSize: Int64?
        var proposedBlob: BlobSummary?
        var time: Timestamp
        var bytesKnown: Bool
    }

    private var storage: CopyOnWrite<Values>

    public var operation: Operation {
        _read { yield storage.values.operation }
        _modify { yield &storage.values.operation }
    }
    public var bucket: BucketName {
        _read { yield storage.values.bucket }
        _modify { yield &storage.values.bucket }
    }
    /// The object name, or for `list` the prefix without its trailing `/`.
    public var path: String {
        _read { yield storage.values.path }
        _modify { yield &storage.values.path }
    }
    public var principal: Principal? {
        _read { yield storage.values.principal }
        _modify { yield &storage.values.principal }
    }
    /// The object as it is (`resource` in rules); nil when it does not exist.
    public var resource: ObjectRecord? {
        _read { yield storage.values.resource }
        _modify { yield &storage.values.resource }
    }
    /// The object as it would be after a write (`request.resource`): fields and size.
    public var proposedFields: ObjectFields? {
        _read { yield storage.values.proposedFields }
        _modify { yield &storage.values.proposedFields }
    }
    public var proposedSize: Int64? {
        _read { yield storage.values.proposedSize }
        _modify { yield &storage.values.proposedSize }
    }
    /// Size and checksums of the bytes an upload would store (`request.resource.md5Hash` and `crc32c`).
    public var proposedBlob: BlobSummary? {
        _read { yield storage.values.proposedBlob }
        _modify { yield &storage.values.proposedBlob }
    }
    public var time: Timestamp {
        _read { yield storage.values.time }
        _modify { yield &storage.values.time }
    }
    /// False when an upload is decided before its bytes arrive (access is checked before the first byte is
    /// stored). Then what only the bytes tell — checksums, and the size when none was declared — is unknown; a
    /// policy must not deny because of it (the upload is decided again, with the bytes, before it commits), but
    /// must deny whatever is denied whatever those values turn out to be.
    public var bytesKnown: Bool {
        _read { yield storage.values.bytesKnown }
        _modify { yield &storage.values.bytesKnown }
    }

    public init(
        operation: Operation, bucket: BucketName, path: String, principal: Principal?, resource: ObjectRecord? = nil,
        proposedFields: ObjectFields? = nil, proposedSize: Int64? = nil, proposedBlob: BlobSummary? = nil,
        time: Timestamp
    ) {
        storage = CopyOnWrite(
            Values(
                operation: operation, bucket: bucket, path: path, principal: principal, resource: resource,
                proposedFields: proposedFields, proposedSize: proposedSize ?? proposedBlob?.size,
                proposedBlob: proposedBlob, time: time, bytesKnown: true))
    }
}

/// Decides whether a request may proceed. The rules engine implements this; so does allow-all.
public protocol AccessPolicy: Sendable {
    func allows(_ request: AccessRequest) -> Bool

    /// ``allows(_:)``, and whether that answer depended on the operation, the bucket and the path alone: not on
    /// the time, the caller, the resource or any document. Such an answer holds for every request of that
    /// operation on that path while ``version`` is unchanged. Default: `allows`, said to depend on more.
    func answer(_ request: AccessRequest) -> AccessAnswer

    /// A number that changes whenever the policy's decisions may change (rules reloaded); 0 for a policy whose
    /// decisions never change (a compiled rules program, allow-all); nil when that is not known, and then no
    /// answer counts as lasting. Default nil.
    var version: UInt64? { get }

    /// ``answer(_:)`` for a thread that must never sleep (an event loop), or nil when it would have to wait, as for
    /// a lock another thread holds: the request is then decided on a thread that may. Default: `answer`, for a
    /// policy that takes no lock.
    func answerWithoutWaiting(_ request: AccessRequest) -> AccessAnswer?
}

/// What ``AccessPolicy/answer(_:)`` decided.
public struct AccessAnswer: Sendable, Equatable {
    public var allowed: Bool
    /// The answer depended on the operation, the bucket and the path alone.
    public var byPathAlone: Bool

    public init(allowed: Bool, byPathAlone: Bool) {
        self.allowed = allowed
        self.byPathAlone = byPathAlone
    }
}

extension AccessPolicy {
    public func answer(_ request: AccessRequest) -> AccessAnswer {
        AccessAnswer(allowed: allows(request), byPathAlone: false)
    }
    public var version: UInt64? { nil }
    public func answerWithoutWaiting(_ request: AccessRequest) -> AccessAnswer? { answer(request) }
}

/// Allows everything, as the Firebase emulator does with open rules. Only for loopback or explicit opt-in.
public struct AllowAllPolicy: AccessPolicy {
    public init() {}
    public func allows(_ request: AccessRequest) -> Bool { true }
    public func answer(_ request: AccessRequest) -> AccessAnswer { AccessAnswer(allowed: true, byPathAlone: true) }
    public var version: UInt64? { 0 }
}
