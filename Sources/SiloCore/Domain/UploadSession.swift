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
        /// A resumable upload of the GCS XML API (`x-goog-resumable: start`).
        case xml
        /// An XML API multipart upload (`POST ?uploads`): holds the metadata of the object to be; its parts are
        /// sessions of their own (`xmlPart`).
        case xmlMultipart
        /// One uploaded part of an XML multipart upload: its blob, size (`received`) and checksums (`part`).
        case xmlPart

        /// Whether chunks are appended to the session's blob (the resumable protocols).
        public var isResumable: Bool { self == .firebase || self == .gcs || self == .xml }
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
    /// Who started the session, as verified when it started (nil: anonymous); its commit is decided for this
    /// principal, whoever sends the last chunk (a session's URL is its credential). Never the credential itself:
    /// the session drops it when made, and ``Principal``'s stored form has no place for it.
    public private(set) var starter: Principal?
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
    /// What an `xmlPart` session's bytes are.
    public var part: UploadPart?

    /// `api` is last and defaulted so the Firebase call sites that predate the GCS API keep compiling unchanged.
    public init(
        id: String, bucket: BucketName, name: ObjectName, fields: ObjectFields, declaredSize: Int64?,
        blobID: BlobID, conditions: Preconditions = .none, starter: Principal? = nil, created: Timestamp,
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
        self.starter = starter
        self.starter?.credential = ""
        self.created = created
        self.updated = created
        self.api = api
    }
}

/// One part of an XML multipart upload as stored with its session: which part, and the checksums of its bytes (the
/// part's ETag is its MD5; the object's CRC32C is combined from the parts').
public struct UploadPart: Sendable, Equatable, Codable {
    public var number: Int
    /// The 16-byte MD5 digest.
    public var md5: [UInt8]
    public var crc32c: UInt32

    public init(number: Int, md5: [UInt8], crc32c: UInt32) {
        self.number = number
        self.md5 = md5
        self.crc32c = crc32c
    }

    private enum CodingKeys: String, CodingKey { case number, md5, crc32c }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let md5 = Base64.decode(try c.decode(String.self, forKey: .md5)), md5.count == 16 else {
            throw DecodingError.dataCorruptedError(forKey: .md5, in: c, debugDescription: "not a base64 MD5")
        }
        self.init(
            number: try c.decode(Int.self, forKey: .number), md5: md5,
            crc32c: try c.decode(UInt32.self, forKey: .crc32c))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(number, forKey: .number)
        try c.encode(Base64.encode(md5), forKey: .md5)
        try c.encode(crc32c, forKey: .crc32c)
    }
}
