package import SiloCore
import Synchronization

/// What one attempt to answer on a socket's thread recorded (``InlinePipeline``): whether any step asked for
/// something that is not in memory, and what the answer read besides the object's version and bytes and the rules'
/// decision by path (``Reads``).
/// The record, not the thrown error, decides, because some steps read with `try?` (access checks) and would otherwise
/// take a refused read for a missing resource.
///
/// One per socket thread, bound into that thread's inline ``ObjectService`` and store views when they are made and
/// cleared before each attempt: what a step reports reaches it as a value it was given, not through a thread slot.
/// Atomic only because the views it is bound into are `Sendable`; one thread reads and writes it.
package final class InlineAttempt: Sendable {
    private let refusedFlag = Atomic<Bool>(false)
    private let readBits = Atomic<UInt8>(0)

    /// What an answer may have read besides the object's version, its bytes and the rules' decision by path. Each
    /// step records what it reads where it reads it. An answer that read none of these follows from the request head
    /// and those alone, so it may be replayed while they stand (``ReplayableAnswer``): a list of what an answer may
    /// depend on, not of what it must not.
    package struct Reads: OptionSet, Sendable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// An access decision that read the time, the caller, the resource or a document (``ObjectService/authorize(_:)``).
        static let decision = Reads(rawValue: 1)
        /// A verified credential, good only until it expires (``RequestPipeline/admit(_:_:_:)``).
        static let credential = Reads(rawValue: 2)
        /// The client's own `X-Request-Id`, which the answer echoes (``Observation/observe(_:_:_:)``).
        static let clientRequestID = Reads(rawValue: 4)
    }

    init() {}

    /// Clears the record for the next attempt.
    func begin() {
        refusedFlag.store(false, ordering: .relaxed)
        readBits.store(0, ordering: .relaxed)
    }

    var refused: Bool { refusedFlag.load(ordering: .relaxed) }

    /// What the answer read so far.
    var reads: Reads { Reads(rawValue: readBits.load(ordering: .relaxed)) }

    func read(_ what: Reads) { readBits.bitwiseOr(what.rawValue, ordering: .relaxed) }

    /// Marks the attempt refused and returns the error that unwinds it. Nothing has been written when this is
    /// thrown: every view below refuses writes before touching the store.
    package func wouldBlock(_ what: @autoclosure () -> String) -> StorageError {
        refusedFlag.store(true, ordering: .relaxed)
        return StorageError(.unavailable, "\(what()) needs the store; not answered inline", cause: WouldBlock())
    }
}

/// The cause of ``InlineAttempt/wouldBlock(_:)``: the answer needs a blocking call.
struct WouldBlock: Error, Sendable {}

/// The metadata store as the inline attempt sees it: live versions the store holds in memory
/// (``MetadataStore/cachedObject(_:_:)``), and nothing else — every other call, and every miss, refuses without
/// calling the store.
struct InlineMetadataView: MetadataStore {
    let store: any MetadataStore
    let attempt: InlineAttempt

    package func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        if let cached = store.cachedObject(bucket, name), generation == nil || generation == cached.generation {
            return cached
        }
        throw attempt.wouldBlock("reading \(bucket)/\(name)")
    }

    package func cachedObject(_ bucket: BucketName, _ name: ObjectName) -> ObjectRecord? {
        store.cachedObject(bucket, name)
    }
    package func cacheStamp(_ bucket: BucketName, _ name: ObjectName) -> CacheStamp? { store.cacheStamp(bucket, name) }
    package func isCurrent(_ stamp: CacheStamp) -> Bool { store.isCurrent(stamp) }

    private func refuse(_ what: String) -> StorageError { attempt.wouldBlock(what) }

    package func bucket(_ name: BucketName) throws -> BucketRecord? { throw refuse("bucket \(name)") }
    package func ensureBucket(_ name: BucketName) throws -> BucketRecord { throw refuse("bucket \(name)") }
    package func buckets() throws -> [BucketRecord] { throw refuse("the bucket list") }
    package func createBucket(_ template: BucketRecord) throws -> BucketRecord { throw refuse("a bucket write") }
    package func updateBucket(_ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void)
        throws
        -> BucketRecord
    { throw refuse("a bucket write") }
    package func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?)
        throws
    {
        throw refuse("a bucket write")
    }
    package func softDeletedBuckets() throws -> [SoftDeletedBucket] { throw refuse("soft-deleted buckets") }
    package func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord {
        throw refuse("a bucket write")
    }
    package func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) { throw refuse("an object write") }
    package func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord { throw refuse("an object write") }
    package func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?) { throw refuse("an object write") }
    package func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord { throw refuse("an object write") }
    package func softDeletedObjects(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws
        -> [SoftDeletedObject]
    { throw refuse("soft-deleted objects") }
    package func softDeletedObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    {
        throw refuse("soft-deleted objects")
    }
    package func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp,
        replacedSoftDeletion: SoftDeletion?, editing edit: (inout ObjectFields) throws -> Void
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) { throw refuse("an object write") }
    package func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int { throw refuse("a purge") }
    package func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws
        -> [ObjectRecord]
    {
        throw refuse("a listing")
    }
    package func listObjectVersions(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws
        -> [ObjectRecord]
    { throw refuse("a listing") }
    package func insertSession(_ session: UploadSession) throws { throw refuse("an upload session") }
    package func session(id: String) throws -> UploadSession? { throw refuse("an upload session") }
    package func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession {
        throw refuse("an upload session")
    }
    package func sessions(updatedBefore time: Timestamp) throws -> [UploadSession] { throw refuse("upload sessions") }
    package func deleteSession(id: String) throws { throw refuse("an upload session") }
    package func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession] {
        throw refuse("upload sessions")
    }
    package func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        throw refuse("upload sessions")
    }
    package func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws { throw refuse("blob bookkeeping") }
    package func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        throw refuse("blob bookkeeping")
    }
    package func claimGarbageBlob(_ id: BlobID, registeredBefore cutoff: Timestamp?, at time: Timestamp) throws -> Bool
    {
        throw refuse("blob bookkeeping")
    }
    package func forgetBlob(_ id: BlobID) throws { throw refuse("blob bookkeeping") }
    /// Nothing is written inline, so nothing is kept inline either.
    package var inlineBlobLimit: Int { 0 }
    package func inlineBlob(_ id: BlobID) throws -> [UInt8]? { throw refuse("blob \(id)") }
    package func isBlobReferenced(_ id: BlobID) throws -> Bool { throw refuse("blob bookkeeping") }
    package func reset() throws { throw refuse("a reset") }
    package func document(_ name: String) throws -> String? { throw refuse("document \(name)") }
    package func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws {
        throw refuse("document \(name)")
    }
    package func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws -> [OutboxEvent] {
        throw refuse("the event outbox")
    }
    package func completeEvent(_ sequence: Int64) throws { throw refuse("the event outbox") }
    package func retryEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws {
        throw refuse("the event outbox")
    }
    package func outboxStatus() throws -> OutboxStatus { throw refuse("the event outbox") }
    package func bucketUsage() throws -> [BucketName: BucketUsage] { throw refuse("bucket usage") }
}

/// The blob store as the inline attempt sees it: nothing. Bytes come from ``SmallBlobCache`` or not at all.
///
/// Decided so, rather than opening local files for sendfile on the loop: `open` and `fstat` of a disk blob can
/// wait on a cold inode or a network file system, and an object too large for the small-blob cache takes long
/// enough to send that one hop to a worker costs nothing measurable.
struct InlineBlobView: BlobStore {
    let attempt: InlineAttempt

    package func makeWriter(_ id: BlobID, at offset: Int64) throws -> any BlobWriter {
        throw attempt.wouldBlock("a blob write")
    }
    package func openReader(_ id: BlobID) throws -> any BlobReader { throw attempt.wouldBlock("blob \(id)") }
    package func deleteBlob(_ id: BlobID) throws { throw attempt.wouldBlock("a blob deletion") }
    package func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod {
        throw attempt.wouldBlock("a blob composition")
    }
}
