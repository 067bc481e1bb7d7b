/// One stored version of an object, as the metadata store keeps it.
///
/// Its fields live in one ``CopyOnWrite`` storage: a record is copied several times per request (out of the
/// metadata cache, into the route, into the response cache's key), and copied field by field that was some twenty
/// retains and releases each time, a measurable share of a small GET's CPU.
public struct ObjectRecord: Sendable, Equatable {
    private var storage: CopyOnWrite<Values>

    public var bucket: BucketName {
        _read { yield storage.values.bucket }
        _modify { yield &storage.values.bucket }
    }
    public var name: ObjectName {
        _read { yield storage.values.name }
        _modify { yield &storage.values.name }
    }
    /// Strictly increasing per name; microseconds since the epoch when the clock allows (as production GCS).
    public var generation: Int64 {
        _read { yield storage.values.generation }
        _modify { yield &storage.values.generation }
    }
    /// Starts at 1 for each generation; +1 on every metadata change.
    public var metageneration: Int64 {
        _read { yield storage.values.metageneration }
        _modify { yield &storage.values.metageneration }
    }
    public var blob: BlobSummary {
        _read { yield storage.values.blob }
        _modify { yield &storage.values.blob }
    }
    public var blobID: BlobID {
        _read { yield storage.values.blobID }
        _modify { yield &storage.values.blobID }
    }
    public var fields: ObjectFields {
        _read { yield storage.values.fields }
        _modify { yield &storage.values.fields }
    }
    public var timeCreated: Timestamp {
        _read { yield storage.values.timeCreated }
        _modify { yield &storage.values.timeCreated }
    }
    public var updated: Timestamp {
        _read { yield storage.values.updated }
        _modify { yield &storage.values.updated }
    }
    /// Number of source objects for composed objects; nil otherwise.
    public var componentCount: Int? {
        _read { yield storage.values.componentCount }
        _modify { yield &storage.values.componentCount }
    }

    public init(
        bucket: BucketName, name: ObjectName, generation: Int64, metageneration: Int64, blob: BlobSummary,
        blobID: BlobID, fields: ObjectFields, timeCreated: Timestamp, updated: Timestamp, componentCount: Int? = nil
    ) {
        storage = CopyOnWrite(
            Values(
                bucket: bucket, name: name, generation: generation, metageneration: metageneration, blob: blob,
                blobID: blobID, fields: fields, timeCreated: timeCreated, updated: updated,
                componentCount: componentCount))
    }

    public static func == (a: ObjectRecord, b: ObjectRecord) -> Bool {
        a.storage.sharesStorage(with: b.storage) || a.storage.values == b.storage.values
    }

    public var size: Int64 { blob.size }

    /// Production's etag shape: base64 of a protobuf-style encoding of (generation, metageneration).
    /// Changes whenever either changes; stable otherwise.
    public var etag: String { Self.etag(generation: generation, metageneration: metageneration) }

    public static func etag(generation: Int64, metageneration: Int64) -> String {
        var bytes: [UInt8] = [0x08]
        appendVarint(UInt64(bitPattern: generation), to: &bytes)
        bytes.append(0x10)
        appendVarint(UInt64(bitPattern: metageneration), to: &bytes)
        return Base64.encode(bytes)
    }
}

private func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
    var v = value
    while v >= 0x80 {
        bytes.append(UInt8(v & 0x7F) | 0x80)
        v >>= 7
    }
    bytes.append(UInt8(v))
}

/// A new object version before the store gives it a generation.
public struct ObjectDraft: Sendable, Equatable {
    public var bucket: BucketName
    public var name: ObjectName
    public var blob: BlobSummary
    public var blobID: BlobID
    public var fields: ObjectFields
    public var componentCount: Int?
    /// Whether the write creates the bucket when it does not exist (the Firebase emulator's v0 behaviour) or the
    /// store refuses it with `.notFound`, as GCS does.
    public var createsBucket: Bool
    /// Set when the bucket soft-deletes: the live version this write replaces (outside versioning) is kept among
    /// the soft-deleted versions instead of going for good, as GCS keeps overwritten objects.
    public var replacedSoftDeletion: SoftDeletion?
    /// The bytes themselves, for a blob the metadata store keeps inline (`blobID.isInline`): stored in the same
    /// transaction as the version, so a small upload is one row in one commit and no file. Nil for every other blob,
    /// which the blob store holds and ``MetadataStore/registerPendingBlob(_:at:)`` registered.
    public var inlineBytes: [UInt8]?

    public init(
        bucket: BucketName, name: ObjectName, blob: BlobSummary, blobID: BlobID, fields: ObjectFields,
        componentCount: Int? = nil, createsBucket: Bool = true, inlineBytes: [UInt8]? = nil
    ) {
        self.bucket = bucket
        self.name = name
        self.blob = blob
        self.blobID = blobID
        self.fields = fields
        self.componentCount = componentCount
        self.createsBucket = createsBucket
        self.inlineBytes = inlineBytes
    }
}

/// A bucket as the metadata store keeps it.
public struct BucketRecord: Sendable, Equatable {
    public var name: BucketName
    public var timeCreated: Timestamp
    public var updated: Timestamp
    public var metageneration: Int64
    public var versioning: Bool
    /// The rest of GCS's bucket resource (labels, lifecycle, retention and soft-delete policies, IAM configuration,
    /// …) as JSON text: the GCS API reads and writes it, stores keep it verbatim.
    public var resource: String
    /// Fixed when the bucket is made (GCS buckets have one: a soft-deleted bucket is restored by it).
    public var generation: Int64

    public init(
        name: BucketName, timeCreated: Timestamp, updated: Timestamp, metageneration: Int64 = 1,
        versioning: Bool = false, resource: String = "{}", generation: Int64? = nil
    ) {
        self.name = name
        self.timeCreated = timeCreated
        self.updated = updated
        self.metageneration = metageneration
        self.versioning = versioning
        self.resource = resource
        self.generation = generation ?? timeCreated.microseconds
    }
}

extension ObjectRecord {
    /// Roughly the memory a copy of this record keeps alive: its strings plus a fixed overhead. What caches of
    /// records are bounded by.
    public var approximateBytes: Int {
        let f = fields
        var bytes = 256 + bucket.rawValue.utf8.count + name.rawValue.utf8.count
        for text in [f.contentType, f.contentEncoding, f.contentDisposition, f.contentLanguage, f.cacheControl] {
            bytes += text?.utf8.count ?? 0
        }
        bytes += f.customMetadataBytes + 32 * f.customMetadata.count + 48 * f.downloadTokens.count
        return bytes
    }
}

extension StorageError {
    /// GCS's answer for a bucket that was never created.
    public static func noSuchBucket(_ name: BucketName) -> StorageError {
        StorageError(.notFound, "The specified bucket does not exist: \(name.rawValue)")
    }
}

extension ObjectRecord {
    fileprivate struct Values: Equatable {
        var bucket: BucketName
        var name: ObjectName
        var generation: Int64
        var metageneration: Int64
        var blob: BlobSummary
        var blobID: BlobID
        var fields: ObjectFields
        var timeCreated: Timestamp
        var updated: Timestamp
        var componentCount: Int?
    }
}
