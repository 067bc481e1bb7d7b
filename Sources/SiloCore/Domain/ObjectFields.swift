/// The writable metadata of an object: what uploads and metadata updates may set.
public struct ObjectFields: Sendable, Equatable, Codable {
    public var contentType: String?
    public var contentEncoding: String?
    public var contentDisposition: String?
    public var contentLanguage: String?
    public var cacheControl: String?
    public var customTime: Timestamp?
    /// Custom metadata; never contains `firebaseStorageDownloadTokens` (that key lives in `downloadTokens`).
    public var customMetadata: [String: String]
    /// Download tokens, oldest first; the first one is what SDKs put in download URLs.
    public var downloadTokens: [String]
    /// What only the GCS JSON API sets: storage class, holds, retention, contexts, ACL.
    public var extras: ObjectExtras

    public init(
        contentType: String? = nil, contentEncoding: String? = nil, contentDisposition: String? = nil,
        contentLanguage: String? = nil, cacheControl: String? = nil, customTime: Timestamp? = nil,
        customMetadata: [String: String] = [:], downloadTokens: [String] = [], extras: ObjectExtras = ObjectExtras()
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.contentDisposition = contentDisposition
        self.contentLanguage = contentLanguage
        self.cacheControl = cacheControl
        self.customTime = customTime
        self.customMetadata = customMetadata
        self.downloadTokens = downloadTokens
        self.extras = extras
    }

    private enum CodingKeys: String, CodingKey {
        case contentType, contentEncoding, contentDisposition, contentLanguage, cacheControl, customTime
        case customMetadata, downloadTokens, extras
    }

    /// Records written before `extras` existed (upload sessions keep fields as JSON) decode with none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            contentType: try c.decodeIfPresent(String.self, forKey: .contentType),
            contentEncoding: try c.decodeIfPresent(String.self, forKey: .contentEncoding),
            contentDisposition: try c.decodeIfPresent(String.self, forKey: .contentDisposition),
            contentLanguage: try c.decodeIfPresent(String.self, forKey: .contentLanguage),
            cacheControl: try c.decodeIfPresent(String.self, forKey: .cacheControl),
            customTime: try c.decodeIfPresent(Timestamp.self, forKey: .customTime),
            customMetadata: try c.decodeIfPresent([String: String].self, forKey: .customMetadata) ?? [:],
            downloadTokens: try c.decodeIfPresent([String].self, forKey: .downloadTokens) ?? [],
            extras: try c.decodeIfPresent(ObjectExtras.self, forKey: .extras) ?? ObjectExtras())
    }

    /// The custom-metadata key through which Firebase tooling reads and writes download tokens.
    public static let downloadTokensKey = "firebaseStorageDownloadTokens"
}

/// The object fields only the GCS JSON API sets. Typed where the server enforces them (holds, retention, storage
/// class); contexts and ACL as the JSON text of their GCS form, which the GCS API layer owns.
public struct ObjectExtras: Sendable, Equatable, Codable {
    public var storageClass: String?
    /// The holds: nil until a write names them, then the value last set, `false` included (GCS shows a hold in the
    /// resource once it has been set, and never before).
    public var temporaryHold: Bool?
    public var eventBasedHold: Bool?
    /// Object retention (`enableObjectRetention` buckets): `Locked` or `Unlocked`, until `retainUntil`.
    public var retentionMode: String?
    public var retainUntil: Timestamp?
    /// `contexts` (`{"custom":{…}}`) and `acl` (a list of entries), as JSON.
    public var contexts: String?
    public var acl: String?
    /// The ACL entity of the creator (`user-<email>`), when the caller's token named one.
    public var owner: String?
    /// The Cloud KMS key the object is said to be encrypted with (`kmsKeyName`), as the writer named it.
    public var kmsKeyName: String?
    /// Base64 SHA-256 of the customer-supplied encryption key the object was written with (`customerEncryption`):
    /// reads of its bytes must present the same key. Silo checks the key; it does not encrypt with it.
    public var customerKeySHA256: String?

    public init(
        storageClass: String? = nil, temporaryHold: Bool? = nil, eventBasedHold: Bool? = nil,
        retentionMode: String? = nil, retainUntil: Timestamp? = nil, contexts: String? = nil, acl: String? = nil,
        owner: String? = nil, kmsKeyName: String? = nil, customerKeySHA256: String? = nil
    ) {
        self.storageClass = storageClass
        self.temporaryHold = temporaryHold
        self.eventBasedHold = eventBasedHold
        self.retentionMode = retentionMode
        self.retainUntil = retainUntil
        self.contexts = contexts
        self.acl = acl
        self.owner = owner
        self.kmsKeyName = kmsKeyName
        self.customerKeySHA256 = customerKeySHA256
    }

    private enum CodingKeys: String, CodingKey {
        case storageClass, temporaryHold, eventBasedHold, retentionMode, retainUntil, contexts, acl, owner
        case kmsKeyName, customerKeySHA256
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            storageClass: try c.decodeIfPresent(String.self, forKey: .storageClass),
            temporaryHold: try c.decodeIfPresent(Bool.self, forKey: .temporaryHold),
            eventBasedHold: try c.decodeIfPresent(Bool.self, forKey: .eventBasedHold),
            retentionMode: try c.decodeIfPresent(String.self, forKey: .retentionMode),
            retainUntil: try c.decodeIfPresent(Timestamp.self, forKey: .retainUntil),
            contexts: try c.decodeIfPresent(String.self, forKey: .contexts),
            acl: try c.decodeIfPresent(String.self, forKey: .acl),
            owner: try c.decodeIfPresent(String.self, forKey: .owner),
            kmsKeyName: try c.decodeIfPresent(String.self, forKey: .kmsKeyName),
            customerKeySHA256: try c.decodeIfPresent(String.self, forKey: .customerKeySHA256))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(storageClass, forKey: .storageClass)
        try c.encodeIfPresent(temporaryHold, forKey: .temporaryHold)
        try c.encodeIfPresent(eventBasedHold, forKey: .eventBasedHold)
        try c.encodeIfPresent(retentionMode, forKey: .retentionMode)
        try c.encodeIfPresent(retainUntil, forKey: .retainUntil)
        try c.encodeIfPresent(contexts, forKey: .contexts)
        try c.encodeIfPresent(acl, forKey: .acl)
        try c.encodeIfPresent(owner, forKey: .owner)
        try c.encodeIfPresent(kmsKeyName, forKey: .kmsKeyName)
        try c.encodeIfPresent(customerKeySHA256, forKey: .customerKeySHA256)
    }

    /// Either hold stops the object from being deleted or replaced.
    public var isHeld: Bool { temporaryHold == true || eventBasedHold == true }
}

/// What a writer knows about bytes it stored: size and checksums.
public struct BlobSummary: Sendable, Equatable {
    public var size: Int64
    /// The 16-byte MD5 digest.
    public var md5: [UInt8]
    public var crc32c: UInt32

    public init(size: Int64, md5: [UInt8], crc32c: UInt32) {
        self.size = size
        self.md5 = md5
        self.crc32c = crc32c
    }
}
