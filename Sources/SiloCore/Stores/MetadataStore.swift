/// Where object metadata, buckets and upload sessions live.
///
/// Calls are synchronous and thread-safe: the HTTP transport runs handlers on its own pool of threads, and a
/// blocking call there costs less than a hop to the async executor and back on every request (see
/// docs/architecture-notes.md). Every method that writes runs in one transaction; preconditions are checked inside it.
public protocol MetadataStore: Sendable {
    // MARK: Buckets
    func bucket(_ name: BucketName) throws -> BucketRecord?
    /// Returns the bucket, creating it first if it does not exist.
    func ensureBucket(_ name: BucketName) throws -> BucketRecord
    func buckets() throws -> [BucketRecord]
    /// Creates the bucket `template` describes (name, versioning, resource; made at `template.timeCreated`) with
    /// metageneration 1. Throws `.alreadyExists` if it exists.
    func createBucket(_ template: BucketRecord) throws -> BucketRecord
    /// Read-modify-write of a bucket in one transaction: `change` edits the settings; the store then bumps
    /// metageneration and sets `updated` (it owns those and `timeCreated`, and ignores edits to them). Changing the
    /// name throws `.invalidArgument`; a throwing `change` writes nothing. Throws `.notFound` if there is no bucket.
    func updateBucket(_ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void) throws
        -> BucketRecord
    /// Deletes an empty bucket and nothing else (its upload sessions, if any, stay to expire), after `check` accepts
    /// it (preconditions), in one transaction. Throws `.notFound`, or `.conflict` while any object version, live or
    /// noncurrent, is in it. Its soft-deleted versions go with it (their blobs become garbage). With `softDeletion`
    /// the bucket itself is kept among the soft-deleted buckets until `hardDeleteAt`, restorable under its name and
    /// generation while no other bucket has taken the name.
    func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?) throws

    /// Soft-deleted buckets, by name then generation.
    func softDeletedBuckets() throws -> [SoftDeletedBucket]

    /// Brings a soft-deleted bucket back with its name, generation and resource. Throws `.notFound`, or
    /// `.alreadyExists` while another bucket has the name.
    func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord

    // MARK: Objects
    /// The live version (generation nil) or a specific generation (live or, with versioning, noncurrent).
    func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord?

    /// The live version of `name` if this store holds it in memory, answered without I/O and without waiting on
    /// anything, not even a lock (one another thread holds makes this a miss); nil when it would have to ask its backend (which says nothing about
    /// whether the object exists). The server answers cache hits on the socket's thread with it. Stores that cannot
    /// answer without a round trip (PostgreSQL, SQLite on its own) keep the default, nil.
    func cachedObject(_ bucket: BucketName, _ name: ObjectName) -> ObjectRecord?

    /// What ``cachedObject(_:_:)`` answers for `name` now, as a stamp that ``isCurrent(_:)`` later compares: it
    /// changes before that answer may change (a write of the object starting or ending, a bucket write, another
    /// writer appearing). Nil while answers from memory are not allowed. An answer derived from the cached version
    /// stands while the stamp read before it is current: the server replays such answers without asking the store
    /// again. Default nil: a store, or a wrapper, that keeps no stamps lets nothing be replayed.
    func cacheStamp(_ bucket: BucketName, _ name: ObjectName) -> CacheStamp?

    /// Whether nothing `stamp` covers has changed since it was read. Default false.
    func isCurrent(_ stamp: CacheStamp) -> Bool

    /// Makes `draft` the live version of its name (creating its bucket if `draft.createsBucket`, else throwing
    /// `.notFound` when there is none): checks `conditions` against the current live version,
    /// assigns a new generation (greater than any before it) with metageneration 1, and takes `draft.blobID` off
    /// the garbage list, where ``registerPendingBlob(_:at:)`` put it. The replaced version's blob becomes garbage
    /// (see `garbageBlobs`). Returns the stored record and the replaced one.
    ///
    /// Throws `.unavailable`, writing nothing, when a collection claimed the blob first
    /// (``claimGarbageBlob(_:registeredBefore:at:)``) or has deleted it: the bytes are gone or going, so the upload
    /// must be sent again. The commit and the claim exclude each other, on every node.
    ///
    /// With `sessionID`, the same transaction finalizes that upload session (state `finalized`, `resultGeneration`
    /// the new generation), so an upload is never live while its session is still open: a retried finalize finds
    /// the session final and answers with its object instead of committing the same blob twice. Throws
    /// `.conflict`, writing nothing, when the session is not active any more; `.notFound` when there is none.
    func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?)

    /// Read-modify-write of the live version's metadata (or of `generation`, live or noncurrent) in one
    /// transaction: `change` edits the fields; the store then bumps metageneration and sets `updated`. Throws
    /// `.notFound` if there is no such version.
    func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord

    /// Renames the live `source` to `destination` in one transaction (GCS's moveTo): checks `sourceConditions`
    /// against the source and `destinationConditions` against the destination's live version, makes a new
    /// version of `destination` with the source's bytes and metadata (metageneration 1, the same blob), and
    /// removes the source as a delete would (kept noncurrent in a versioned bucket). The blob never becomes
    /// garbage; the destination's replaced version does, as with an insert.
    func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?)

    /// Deletes the live version (or the given generation). Its blob becomes garbage — unless `softDeletion` is
    /// given and the version leaves the bucket (not when a versioned bucket keeps it noncurrent): then it is kept,
    /// blob and all, among the soft-deleted versions until `softDeletion.hardDeleteAt`. Throws `.notFound`.
    func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord

    /// Soft-deleted versions whose names start with `prefix`, after `startAfter`, ordered by (name bytes,
    /// generation), at most `limit`.
    func softDeletedObjects(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int) throws
        -> [SoftDeletedObject]

    func softDeletedObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws -> SoftDeletedObject?

    /// Makes a soft-deleted version live again as a new generation (metageneration 1, same blob and metadata as
    /// `edit` leaves them), in one transaction with `conditions` checked against the live version it replaces (kept
    /// noncurrent in a versioned bucket, else soft-deleted with `replacedSoftDeletion` or, without, its blob becomes
    /// garbage, as with an insert). Throws `.notFound`.
    func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp,
        replacedSoftDeletion: SoftDeletion?, editing edit: (inout ObjectFields) throws -> Void
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?)

    /// Forgets soft-deleted versions (and buckets) whose hard-delete time is at or before `time`, at most `limit`
    /// versions; their blobs become garbage. Returns how many versions went.
    func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int

    /// Live versions whose names start with `prefix` and sort (by UTF-8 bytes) after `startAfter`, in byte order,
    /// at most `limit`. `startAfter` is raw bytes so callers can skip a whole prefix with a `0xFF` suffix.
    func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws -> [ObjectRecord]

    /// Every version, live and noncurrent, whose name starts with `prefix` and that sorts strictly after
    /// `startAfter`, ordered by (name bytes, generation ascending), at most `limit`.
    func listObjectVersions(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int) throws
        -> [ObjectRecord]

    // MARK: Upload sessions
    func insertSession(_ session: UploadSession) throws
    func session(id: String) throws -> UploadSession?
    /// Read-modify-write of a session in one transaction. Throws `.notFound`.
    func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession
    /// Sessions last touched before `time` (for expiry).
    func sessions(updatedBefore time: Timestamp) throws -> [UploadSession]
    func deleteSession(id: String) throws
    /// Sessions whose ids start with `prefix` and sort (by UTF-8 bytes) after `startAfter`, in that order, at most
    /// `limit`: how the parts of an XML multipart upload, and a bucket's uploads, are found. `prefix` must end in
    /// a printable ASCII character (see ``UploadSession/idRangeEnd(_:)``).
    func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession]
    /// The active sessions of `caller` touched at or after `time`, and the bytes they hold: what per-caller upload
    /// quotas count.
    func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage
    /// Every caller's active sessions and the bytes they hold, in one aggregate read (what `/metrics` reports as
    /// open uploads). Stores that wrap another forward it; the default refuses, so a store that does not count
    /// reports nothing rather than a wrong number.
    func activeSessionTotals() throws -> SessionUsage

    // MARK: Blob bookkeeping
    /// Records that `id` is about to be written: until an object or an active session claims it, it is garbage
    /// once older than the caller's grace period. Call before creating the blob, so a crash never leaves an
    /// unrecorded blob behind.
    func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws
    /// Candidates for collection: pending or replaced blobs registered before `time` that no object version and no
    /// active session references (among them any a collection claimed and did not finish). A candidate is deleted
    /// only after ``claimGarbageBlob(_:registeredBefore:at:)`` hands it over.
    func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID]
    /// Hands `id` over for deletion, in one transaction that excludes every commit of it: true when it is on the
    /// garbage list, registered before `cutoff` (any time when nil), and no object version, soft-deleted version or
    /// active session references it — or a collection claimed it already. From then on no commit can take it
    /// (``insertObject(_:conditions:at:finalizing:)`` throws `.unavailable`); delete its bytes, then
    /// ``forgetBlob(_:)``. A claim that is never finished stays on the list, and the next collection finishes it.
    func claimGarbageBlob(_ id: BlobID, registeredBefore cutoff: Timestamp?, at time: Timestamp) throws -> Bool
    /// Forgets a blob after its bytes have been deleted from the blob store; an inline blob's bytes go with it.
    func forgetBlob(_ id: BlobID) throws
    /// The largest blob, in bytes, that this store keeps inline (``ObjectDraft/inlineBytes``); 0 when it keeps none.
    /// Stores that wrap another forward it, as they forward ``inlineBlob(_:)``: no default, so none can forget.
    var inlineBlobLimit: Int { get }
    /// The bytes of an inline blob (`id.isInline`); nil when the store has none by that id (collected, or never
    /// committed).
    func inlineBlob(_ id: BlobID) throws -> [UInt8]?
    /// Whether an object version (live, noncurrent or soft-deleted) or an active upload session points to `id`.
    func isBlobReferenced(_ id: BlobID) throws -> Bool

    /// Drops every object, bucket and session (the emulator's `POST /internal/reset`); their blobs become garbage.
    /// Documents stay: they are the server's settings, not test data.
    func reset() throws

    // MARK: Documents

    /// A small named document (the server's HMAC keys, a few KiB; callers bound what they store), nil when none.
    func document(_ name: String) throws -> String?
    /// Read-modify-write of a document in one transaction: `change` gets the stored text (nil when none) and leaves
    /// the text to store (nil deletes it). A throwing `change` writes nothing. `change` may run more than once (a
    /// store may retry a transaction), so it must depend only on its argument.
    func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws

    // MARK: Storage events and usage

    /// Leases to `owner`, until `leaseUntil`, at most `limit` outbox events that are due at `now` (never tried, or
    /// their retry time has come) and that no lease holds past `now`, oldest first. On a store that several nodes
    /// share, each event goes to one claimer: another node's concurrent claim skips the rows this one holds. Events
    /// exist only in a store opened with events on (``TransactionalMetadataStore/recordsEvents``): written in the
    /// transaction of the change they report, so a change that does not commit has none.
    func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws -> [OutboxEvent]
    /// Forgets a delivered event (whoever holds its lease: it was delivered).
    func completeEvent(_ sequence: Int64) throws
    /// Records a failed delivery while `owner` still holds the lease: one more attempt, due again at `retryAt`, lease
    /// dropped. A no-op when the lease went to another node meanwhile.
    func retryEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws
    /// Undelivered events: how many, and the oldest one's time.
    func outboxStatus() throws -> OutboxStatus
    /// Every bucket's live and noncurrent objects and bytes, as the store's transactions keep them (no scan).
    func bucketUsage() throws -> [BucketName: BucketUsage]
}

extension MetadataStore {
    /// Restores a soft-deleted version with its metadata as it was.
    public func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) {
        try restoreObject(
            bucket, name, generation: generation, conditions: conditions, at: time, replacedSoftDeletion: nil,
            editing: { _ in })
    }

    public func cachedObject(_ bucket: BucketName, _ name: ObjectName) -> ObjectRecord? { nil }
    public func cacheStamp(_ bucket: BucketName, _ name: ObjectName) -> CacheStamp? { nil }
    public func isCurrent(_ stamp: CacheStamp) -> Bool { false }

    public func activeSessionTotals() throws -> SessionUsage {
        throw StorageError(.unimplemented, "this metadata store does not count open upload sessions")
    }

    public func createBucket(_ name: BucketName, versioning: Bool, at time: Timestamp) throws -> BucketRecord {
        try createBucket(BucketRecord(name: name, timeCreated: time, updated: time, versioning: versioning))
    }

    public func deleteBucket(_ name: BucketName) throws { try deleteBucket(name, check: { _ in }, softDeletion: nil) }

    public func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void) throws {
        try deleteBucket(name, check: check, softDeletion: nil)
    }

    /// ``deleteObject(_:_:generation:conditions:softDeletion:)`` without soft delete.
    public func deleteObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions)
        throws -> ObjectRecord
    {
        try deleteObject(bucket, name, generation: generation, conditions: conditions, softDeletion: nil)
    }

    /// ``updateObject(_:_:generation:conditions:at:_:)`` of the live version.
    public func updateObject(
        _ bucket: BucketName, _ name: ObjectName, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord {
        try updateObject(bucket, name, generation: nil, conditions: conditions, at: time, change)
    }

    /// ``insertObject(_:conditions:at:finalizing:)`` outside any upload session.
    public func insertObject(_ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp) throws -> (
        stored: ObjectRecord, replaced: ObjectRecord?
    ) {
        try insertObject(draft, conditions: conditions, at: time, finalizing: nil)
    }
}

extension UploadSession {
    /// The session as the finalize that made generation `generation` at `time` leaves it. Stores apply this inside
    /// the transaction that makes the object live, and only to an active session. `received`: the object's size, the
    /// bytes the session took in all (its finalizing chunk records them here, in the same transaction).
    public func finalized(generation: Int64, at time: Timestamp, received: Int64) -> UploadSession {
        var session = self
        session.received = received
        session.state = .finalized
        session.resultGeneration = generation
        session.updated = time
        return session
    }

    /// The exclusive end of the id range of `prefix`: the prefix with its last character, which must be printable
    /// ASCII other than `~`, raised by one. Every id that starts with `prefix` sorts below it, byte-wise.
    public static func idRangeEnd(_ prefix: String) throws -> String {
        guard let last = prefix.utf8.last, last >= 0x20, last < 0x7E else {
            throw StorageError(.invalidArgument, "a session id prefix must end in printable ASCII other than ~")
        }
        return String(prefix.dropLast()) + String(UnicodeScalar(last + 1))
    }

    /// What a store throws when asked to finalize a session that is no longer active.
    public static func notActive(_ id: String, state: State) -> StorageError {
        StorageError(.conflict, "upload session \(id.prefix(64)) is \(state.rawValue), not active")
    }
}

/// What one caller's open upload sessions hold.
public struct SessionUsage: Sendable, Equatable {
    public var sessions: Int
    public var bytes: Int64

    public init(sessions: Int, bytes: Int64) {
        self.sessions = sessions
        self.bytes = bytes
    }
}

/// When a soft-deleted version was deleted and when it goes for good (GCS's `softDeleteTime`, `hardDeleteTime`).
public struct SoftDeletion: Sendable, Equatable {
    public var at: Timestamp
    public var hardDeleteAt: Timestamp

    public init(at: Timestamp, hardDeleteAt: Timestamp) {
        self.at = at
        self.hardDeleteAt = hardDeleteAt
    }
}

/// A record deleted under a soft-delete policy, kept restorable until its hard-delete time.
public struct SoftDeleted<Record: Sendable & Equatable>: Sendable, Equatable {
    public var record: Record
    public var deletion: SoftDeletion

    public init(record: Record, deletion: SoftDeletion) {
        self.record = record
        self.deletion = deletion
    }
}

/// An object version deleted from a bucket with a soft-delete policy.
public typealias SoftDeletedObject = SoftDeleted<ObjectRecord>
/// A bucket deleted under a soft-delete policy.
public typealias SoftDeletedBucket = SoftDeleted<BucketRecord>

/// A reading of a caching store's change counters for one object (``MetadataStore/cacheStamp(_:_:)``): the store's
/// own, which every bucket write and every change of writer moves, and the one its object shares with the others
/// hashed to the same stripe.
public struct CacheStamp: Sendable, Equatable {
    public let store: UInt64
    public let object: UInt64
    /// Which of the store's object counters.
    public let stripe: Int

    /// Only the store that keeps the counters makes stamps, so `stripe` is always one of its own.
    init(store: UInt64, object: UInt64, stripe: Int) {
        (self.store, self.object, self.stripe) = (store, object, stripe)
    }
}
