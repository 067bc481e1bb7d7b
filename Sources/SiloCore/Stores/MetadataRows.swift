/// The row-level operations one write transaction of a metadata store is made of: what each backend implements (as
/// SQL statements, or on its dictionaries) so that the transactions themselves — preconditions, replacing the live
/// version, the garbage list, generation numbering — are written once, in ``TransactionalMetadataStore``.
///
/// A value of this type exists only inside ``TransactionalMetadataStore/transaction(_:)``. Reads lock what they
/// return until the transaction ends where the backend has row locks (PostgreSQL: `FOR UPDATE`; the embedded stores
/// run one writer at a time, so they need none). The transactions throw only before their first write that a backend
/// could not take back, except for the backend's own failures, which roll the transaction back; that is what lets
/// the in-memory store apply each operation as it comes.
public protocol MetadataRows {
    // MARK: Buckets

    /// The bucket, locked as `lock` says.
    mutating func bucket(_ name: BucketName, lock: BucketLock) throws -> BucketRecord?
    /// Creates the bucket (default settings, made at `time`) unless it exists, and returns it share-locked.
    mutating func ensureBucket(_ name: BucketName, at time: Timestamp) throws -> BucketRecord
    /// Inserts `record` unless a bucket has its name; false when one has.
    mutating func insertBucket(_ record: BucketRecord) throws -> Bool
    /// Writes the settings, `updated` and metageneration of the stored bucket `record` names.
    mutating func updateBucket(_ record: BucketRecord) throws
    /// Whether any object version, live or noncurrent, is in the bucket.
    mutating func bucketHasVersions(_ name: BucketName) throws -> Bool
    /// Deletes the bucket, keeping it among the soft-deleted buckets with `softDeletion` when given.
    mutating func deleteBucket(_ name: BucketName, softDeletion: SoftDeletion?) throws
    /// The soft-deleted bucket `name`#`generation`, locked.
    mutating func softDeletedBucket(_ name: BucketName, generation: Int64) throws -> BucketRecord?
    mutating func deleteSoftDeletedBucket(_ name: BucketName, generation: Int64) throws
    /// Forgets the soft-deleted buckets whose hard-delete time is at or before `time`.
    mutating func deleteSoftDeletedBuckets(hardDeletedBy time: Timestamp) throws

    // MARK: Object versions

    /// Makes every other writer of this name wait until the transaction ends (PostgreSQL, whose nodes write
    /// concurrently: it also covers a name with no version yet, which a row lock cannot). A no-op where one writer
    /// runs at a time.
    mutating func lockName(_ bucket: BucketName, _ name: ObjectName) throws
    /// The live version of the name, locked.
    mutating func liveVersion(_ bucket: BucketName, _ name: ObjectName) throws -> ObjectRecord?
    /// The version `generation` of the name, live or noncurrent, locked.
    mutating func version(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws -> ObjectRecord?
    /// The next generation of `name`: greater than any handed out before for that name (even by other nodes, and
    /// before a delete), and at least `time` in microseconds. Counted only if the transaction commits. A store may
    /// hand the same number to two names (GCS promises order per name only), so that writes of different names
    /// need not wait on one counter.
    mutating func nextGeneration(for bucket: BucketName, _ name: ObjectName, at time: Timestamp) throws -> Int64
    /// Inserts `record` as the live version of its name (the caller has retired the one before).
    mutating func insertLiveVersion(_ record: ObjectRecord) throws
    /// Writes the metageneration, `updated` and fields of the stored version `record` names.
    mutating func updateVersion(_ record: ObjectRecord) throws
    /// Keeps the live version `record` as a noncurrent version.
    mutating func markNoncurrent(_ record: ObjectRecord) throws
    /// Deletes the version `record`, live or not, keeping it among the soft-deleted versions with `softDeletion`
    /// when given. Its blob is the caller's business.
    mutating func deleteVersion(_ record: ObjectRecord, softDeletion: SoftDeletion?) throws

    // MARK: Soft-deleted versions

    /// The soft-deleted version, locked.
    mutating func softDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    mutating func deleteSoftDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
    /// Forgets at most `limit` soft-deleted versions whose hard-delete time is at or before `time` and returns their
    /// blobs (one for each version forgotten).
    mutating func deleteSoftDeletedVersions(hardDeletedBy time: Timestamp, limit: Int) throws -> [BlobID]
    /// Forgets every soft-deleted version in the bucket; their blobs go on the garbage list, registered at `time`.
    mutating func deleteSoftDeletedVersions(inBucket name: BucketName, garbageAt time: Timestamp) throws

    // MARK: Upload sessions

    /// The session, locked.
    mutating func session(id: String) throws -> UploadSession?
    /// Inserts a new session; throws `.alreadyExists` when one has its id.
    mutating func insertSession(_ session: UploadSession) throws
    /// Writes the stored session `session.id` names.
    mutating func updateSession(_ session: UploadSession) throws
    mutating func deleteSession(id: String) throws

    // MARK: Blob bookkeeping

    /// Puts the blob on the garbage list, registered at `time`, unless it is on it already.
    mutating func addGarbage(_ id: BlobID, at time: Timestamp) throws
    /// Takes the blob off the garbage list (its bytes have been deleted).
    mutating func removeGarbage(_ id: BlobID) throws
    /// Takes the blob off the garbage list for a version that is about to hold it, unless a collection has claimed
    /// it; false when it is not on the list, or is claimed. One statement on the blob's row, so that where writers run
    /// concurrently (PostgreSQL) it waits for a claim of the row in progress and then sees its result.
    mutating func takeGarbage(_ id: BlobID) throws -> Bool
    /// The blob's entry on the garbage list, locked (a take of it in progress elsewhere finishes first, and a take
    /// that comes later waits for this transaction); nil when it is not on it.
    mutating func garbageEntry(_ id: BlobID) throws -> GarbageEntry?
    /// Marks the blob's entry as claimed by a collection at `time`: its bytes are about to go, and no commit may take
    /// it any more.
    mutating func markCollecting(_ id: BlobID, at time: Timestamp) throws
    /// Whether an object version (live, noncurrent or soft-deleted) or an active upload session points to `id`.
    mutating func blobIsReferenced(_ id: BlobID) throws -> Bool
    /// Stores an inline blob's bytes (``ObjectDraft/inlineBytes``) under its id.
    mutating func insertInlineBlob(_ id: BlobID, _ bytes: [UInt8]) throws
    /// Deletes an inline blob's bytes; none is not an error.
    mutating func deleteInlineBlob(_ id: BlobID) throws

    /// Everything but the documents goes; every blob an object version, session or soft-deleted version held goes
    /// on the garbage list, registered at `time`.
    mutating func deleteAllButDocuments(garbageAt time: Timestamp) throws

    // MARK: Documents

    /// The document, locked (even when there is none yet, where the backend can).
    mutating func document(_ name: String) throws -> String?
    /// Stores the text, or deletes the document when `text` is nil.
    mutating func storeDocument(_ name: String, _ text: String?) throws

    // MARK: Event outbox and usage

    /// Appends `event` to the outbox, due at once, with the next sequence number (never one handed out before).
    mutating func appendEvent(_ event: StorageEvent) throws
    /// ``MetadataStore/claimEvents(owner:now:leaseUntil:limit:)``'s rows: the due, unleased events, oldest first,
    /// leased to `owner`; rows other transactions hold are skipped, not waited for.
    mutating func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws
        -> [OutboxEvent]
    mutating func deleteEvent(_ sequence: Int64) throws
    /// One more attempt, due at `retryAt`, lease dropped; only while `owner` holds the lease.
    mutating func releaseEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws
    mutating func outboxStatus() throws -> OutboxStatus
    /// Adds `delta` to the bucket's counts.
    mutating func addUsage(_ bucket: BucketName, _ delta: BucketUsage) throws
    /// The counts of every bucket that exists (zero where nothing was counted).
    mutating func bucketUsage() throws -> [BucketName: BucketUsage]
}

/// How ``MetadataRows/bucket(_:lock:)`` locks the bucket it reads, where the backend has row locks.
public enum BucketLock: Sendable {
    /// Its settings (versioning) stay as read, and it stays, while the transaction relies on them.
    case share
    /// The transaction is about to change or delete it.
    case update
}

/// A blob on the garbage list: when it was registered (an upload about to write it, or a version that let it go), and
/// when a collection claimed it for deletion, if one has.
public struct GarbageEntry: Sendable, Equatable {
    public var registered: Timestamp
    public var collecting: Timestamp?

    public init(registered: Timestamp, collecting: Timestamp?) {
        self.registered = registered
        self.collecting = collecting
    }
}
