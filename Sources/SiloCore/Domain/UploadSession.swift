/// A resumable upload in progress, kept in the metadata store so it survives restarts.
public struct UploadSession: Sendable, Equatable {
    public enum State: String, Sendable, Codable {
        case active, finalized, cancelled
        /// Finalize was refused (rules, preconditions, checksum); repeating finalize repeats the refusal.
        case failed
    }

    /// Which protocol started the upload, so chunk and finalize requests answer in that protocol's shape.
    public enum API: String, Sendable, Codable {
        case firebase, gcs
    }

    /// Unguessable; it is the capability that authorizes chunk requests (iOS sends no Authorization on them).
    public var id: String
    public var bucket: BucketName
    public var name: ObjectName
    public var fields: ObjectFields
    /// The total the client announced at start, if any.
    public var declaredSize: Int64?
    /// Bytes persisted so far (the blob is fsync'ed up to here before this is recorded).
    public var received: Int64
    public var blobID: BlobID
    public var state: State
    public var conditions: Preconditions
    /// Opaque caller identity captured at start (the raw credential), so later chunks act as that caller.
    public var principal: String?
    /// Generation of the object made at finalize, or the HTTP status/message of a refused finalize.
    public var resultGeneration: Int64?
    public var failureStatus: Int?
    public var failureMessage: String?
    /// Client-supplied checksums to verify at finalize (GCS JSON uploads).
    public var expectedMD5: String?
    public var expectedCRC32C: String?
    public var created: Timestamp
    public var updated: Timestamp
    public var api: API
    /// Who the session counts against for per-caller quotas (`uid:…`, `ip:…`); nil for admin sessions.
    public var caller: String?

    /// `api` is last and defaulted so the Firebase call sites that predate the GCS API keep compiling unchanged.
    public init(
        id: String, bucket: BucketName, name: ObjectName, fields: ObjectFields, declaredSize: Int64?,
        blobID: BlobID, conditions: Preconditions = .none, principal: String? = nil, created: Timestamp,
        api: API = .firebase
    ) {
        self.id = id
        self.bucket = bucket
        self.name = name
        self.fields = fields
        self.declaredSize = declaredSize
        self.received = 0
        self.blobID = blobID
        self.state = .active
        self.conditions = conditions
        self.principal = principal
        self.created = created
        self.updated = created
        self.api = api
    }
}
