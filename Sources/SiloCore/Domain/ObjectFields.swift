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

    public init(
        contentType: String? = nil, contentEncoding: String? = nil, contentDisposition: String? = nil,
        contentLanguage: String? = nil, cacheControl: String? = nil, customTime: Timestamp? = nil,
        customMetadata: [String: String] = [:], downloadTokens: [String] = []
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.contentDisposition = contentDisposition
        self.contentLanguage = contentLanguage
        self.cacheControl = cacheControl
        self.customTime = customTime
        self.customMetadata = customMetadata
        self.downloadTokens = downloadTokens
    }

    /// The custom-metadata key through which Firebase tooling reads and writes download tokens.
    public static let downloadTokensKey = "firebaseStorageDownloadTokens"
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
