import SiloCore
import SiloTesting
import Synchronization
import Testing

/// The shared write transactions (``TransactionalMetadataStore``) over rows that record what they are asked to do:
/// what the conformance suite cannot see from outside a store.
@Suite struct TransactionalMetadataStoreTests {
    let bucket = bucketName()
    let t = Timestamp(microseconds: 1_000)

    /// Every refusal comes before the transaction's first write. The in-memory store applies writes as they come
    /// and has no rollback, so a write before a throw would stay.
    @Test func refusalsComeBeforeAnyWrite() throws {
        let store = RecordingStore()
        _ = try store.createBucket(bucket, versioning: false, at: t)
        _ = try store.insertUploaded(draft("a", bucket: bucket), conditions: .none, at: t)
        try store.insertSession(session("s1"))
        // Registered now, as uploads register their blobs before the bytes, so the refusals below are the inserts'.
        let (a, b, elsewhere) = (draft("a"), draft("b"), noBucketDraft())
        for pending in [a, b, elsewhere] { try store.registerPendingBlob(pending.blobID, at: t) }
        let refusals: [(String, () throws -> Void)] = [
            (
                "insert, precondition",
                { _ = try store.insertObject(a, conditions: .init(ifGenerationMatch: 0), at: self.t) }
            ),
            (
                "insert, no session",
                { _ = try store.insertObject(b, conditions: .none, at: self.t, finalizing: "none") }
            ),
            ("insert, no bucket", { _ = try store.insertObject(elsewhere, conditions: .none, at: self.t) }),
            (
                "insert, blob never registered",
                { _ = try store.insertObject(draft("c"), conditions: .none, at: self.t) }
            ),
            (
                "update, change throws",
                {
                    _ = try store.updateObject(self.bucket, objectName("a"), conditions: .none, at: self.t) { _ in
                        throw Refused()
                    }
                }
            ),
            (
                "update, missing",
                { _ = try store.updateObject(self.bucket, objectName("zz"), conditions: .none, at: self.t) { _ in } }
            ),
            (
                "move, destination precondition",
                {
                    _ = try store.moveObject(
                        self.bucket, from: objectName("a"), to: objectName("b"), sourceConditions: .none,
                        destinationConditions: .init(ifGenerationMatch: 5), at: self.t)
                }
            ),
            (
                "delete, precondition",
                {
                    _ = try store.deleteObject(
                        self.bucket, objectName("a"), generation: nil, conditions: .init(ifMetagenerationMatch: 9))
                }
            ),
            (
                "restore, missing",
                {
                    _ = try store.restoreObject(
                        self.bucket, objectName("a"), generation: 1, conditions: .none, at: self.t)
                }
            ),
            ("bucket, not empty", { try store.deleteBucket(self.bucket) }),
            ("bucket, check throws", { try store.deleteBucket(self.bucket) { _ in throw Refused() } }),
            ("bucket, change throws", { _ = try store.updateBucket(self.bucket, at: self.t) { _ in throw Refused() } }),
            ("bucket, exists", { _ = try store.createBucket(self.bucket, versioning: true, at: self.t) }),
            ("session, exists", { try store.insertSession(self.session("s1")) }),
            ("session, change throws", { _ = try store.updateSession(id: "s1") { _ in throw Refused() } }),
            ("document, change throws", { try store.updateDocument("d") { _ in throw Refused() } }),
        ]
        for (what, refusal) in refusals {
            store.writes.withLock { $0 = [] }
            #expect(throws: (any Error).self, "\(what)") { try refusal() }
            #expect(store.writes.withLock { $0 }.isEmpty, "\(what) wrote before it threw")
        }
    }

    /// Replacing a version in an unversioned bucket: the new blob off the garbage list first (a blob a collection
    /// claimed refuses the commit before anything is written), the old version's blob onto it before its row goes,
    /// and the session finalized last, in one transaction.
    @Test func insertReplacesInOrder() throws {
        let store = RecordingStore()
        let first = try store.insertUploaded(draft("a", bucket: bucket), conditions: .none, at: t).stored
        try store.insertSession(session("s2"))
        let second = draft("a", bucket: bucket)
        try store.registerPendingBlob(second.blobID, at: t)
        store.writes.withLock { $0 = [] }
        _ = try store.insertObject(second, conditions: .none, at: t, finalizing: "s2")
        #expect(
            store.writes.withLock { $0 } == [
                "takeGarbage \(second.blobID.rawValue)", "addGarbage \(first.blobID.rawValue)",
                "deleteVersion \(first.generation)", "nextGeneration", "insertLiveVersion", "updateSession s2",
            ])
    }

    private func session(_ id: String) -> UploadSession {
        UploadSession(
            id: id, bucket: bucket, name: objectName("a"), fields: ObjectFields(), declaredSize: nil, blobID: .random(),
            created: t)
    }

    private func noBucketDraft() -> ObjectDraft {
        var draft = draft("x", bucket: bucketName("elsewhere.appspot.com"))
        draft.createsBucket = false
        return draft
    }
}

private struct Refused: Error {}

/// The in-memory store's transactions, with every row write recorded before it is made.
private final class RecordingStore: TransactionalMetadataStore {
    let base = InMemoryMetadataStore(now: { Timestamp(microseconds: 2_000) })
    let writes = Mutex<[String]>([])

    func transaction<Result>(_ body: (inout RecordingRows<InMemoryMetadataRows>) throws -> Result) throws -> Result {
        try base.transaction { rows in
            var recording = RecordingRows(
                base: rows, record: { [self] entry in self.writes.withLock { $0.append(entry) } })
            defer { rows = recording.base }
            return try body(&recording)
        }
    }

    func currentTime() -> Timestamp { base.currentTime() }
    var recordsEvents: Bool { base.recordsEvents }

    func bucket(_ name: BucketName) throws -> BucketRecord? { try base.bucket(name) }
    func buckets() throws -> [BucketRecord] { try base.buckets() }
    func softDeletedBuckets() throws -> [SoftDeletedBucket] { try base.softDeletedBuckets() }
    func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        try base.object(bucket, name, generation: generation)
    }
    func softDeletedObjects(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int) throws
        -> [SoftDeletedObject]
    { try base.softDeletedObjects(bucket, prefix: prefix, startAfter: startAfter, limit: limit) }
    func softDeletedObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws -> SoftDeletedObject? {
        try base.softDeletedObject(bucket, name, generation: generation)
    }
    func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws -> [ObjectRecord] {
        try base.listObjects(bucket, prefix: prefix, startAfter: startAfter, limit: limit)
    }
    func listObjectVersions(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int) throws
        -> [ObjectRecord]
    { try base.listObjectVersions(bucket, prefix: prefix, startAfter: startAfter, limit: limit) }
    func session(id: String) throws -> UploadSession? { try base.session(id: id) }
    func sessions(updatedBefore time: Timestamp) throws -> [UploadSession] { try base.sessions(updatedBefore: time) }
    func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession] {
        try base.sessions(idPrefix: prefix, after: startAfter, limit: limit)
    }
    func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        try base.activeSessionUsage(caller: caller, updatedSince: time)
    }
    func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        try base.garbageBlobs(registeredBefore: time, limit: limit)
    }
    func isBlobReferenced(_ id: BlobID) throws -> Bool { try base.isBlobReferenced(id) }
    var inlineBlobLimit: Int { base.inlineBlobLimit }
    func inlineBlob(_ id: BlobID) throws -> [UInt8]? { try base.inlineBlob(id) }
    func document(_ name: String) throws -> String? { try base.document(name) }
}

/// Rows that pass everything to `base`, and report each write (by name) to `record` before making it.
private struct RecordingRows<Base: MetadataRows>: MetadataRows {
    var base: Base
    let record: (String) -> Void

    mutating func bucket(_ name: BucketName, lock: BucketLock) throws -> BucketRecord? {
        try base.bucket(name, lock: lock)
    }
    mutating func ensureBucket(_ name: BucketName, at time: Timestamp) throws -> BucketRecord {
        if try base.bucket(name, lock: .share) == nil { record("ensureBucket") }
        return try base.ensureBucket(name, at: time)
    }
    mutating func insertBucket(_ r: BucketRecord) throws -> Bool {
        // It refuses by itself (false), writing nothing.
        if try base.bucket(r.name, lock: .share) == nil { record("insertBucket") }
        return try base.insertBucket(r)
    }
    mutating func updateBucket(_ r: BucketRecord) throws {
        record("updateBucket")
        try base.updateBucket(r)
    }
    mutating func bucketHasVersions(_ name: BucketName) throws -> Bool { try base.bucketHasVersions(name) }
    mutating func deleteBucket(_ name: BucketName, softDeletion: SoftDeletion?) throws {
        record("deleteBucket")
        try base.deleteBucket(name, softDeletion: softDeletion)
    }
    mutating func softDeletedBucket(_ name: BucketName, generation: Int64) throws -> BucketRecord? {
        try base.softDeletedBucket(name, generation: generation)
    }
    mutating func deleteSoftDeletedBucket(_ name: BucketName, generation: Int64) throws {
        record("deleteSoftDeletedBucket")
        try base.deleteSoftDeletedBucket(name, generation: generation)
    }
    mutating func deleteSoftDeletedBuckets(hardDeletedBy time: Timestamp) throws {
        record("deleteSoftDeletedBuckets")
        try base.deleteSoftDeletedBuckets(hardDeletedBy: time)
    }
    mutating func lockName(_ bucket: BucketName, _ name: ObjectName) throws { try base.lockName(bucket, name) }
    mutating func liveVersion(_ bucket: BucketName, _ name: ObjectName) throws -> ObjectRecord? {
        try base.liveVersion(bucket, name)
    }
    mutating func version(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws -> ObjectRecord? {
        try base.version(bucket, name, generation: generation)
    }
    mutating func nextGeneration(for bucket: BucketName, _ name: ObjectName, at time: Timestamp) throws -> Int64 {
        record("nextGeneration")
        return try base.nextGeneration(for: bucket, name, at: time)
    }
    mutating func insertLiveVersion(_ r: ObjectRecord) throws {
        record("insertLiveVersion")
        try base.insertLiveVersion(r)
    }
    mutating func updateVersion(_ r: ObjectRecord) throws {
        record("updateVersion")
        try base.updateVersion(r)
    }
    mutating func markNoncurrent(_ r: ObjectRecord) throws {
        record("markNoncurrent \(r.generation)")
        try base.markNoncurrent(r)
    }
    mutating func deleteVersion(_ r: ObjectRecord, softDeletion: SoftDeletion?) throws {
        record("deleteVersion \(r.generation)")
        try base.deleteVersion(r, softDeletion: softDeletion)
    }
    mutating func softDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    { try base.softDeletedVersion(bucket, name, generation: generation) }
    mutating func deleteSoftDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws {
        record("deleteSoftDeletedVersion")
        try base.deleteSoftDeletedVersion(bucket, name, generation: generation)
    }
    mutating func deleteSoftDeletedVersions(hardDeletedBy time: Timestamp, limit: Int) throws -> [BlobID] {
        record("deleteSoftDeletedVersions")
        return try base.deleteSoftDeletedVersions(hardDeletedBy: time, limit: limit)
    }
    mutating func deleteSoftDeletedVersions(inBucket name: BucketName, garbageAt time: Timestamp) throws {
        record("deleteSoftDeletedVersions in bucket")
        try base.deleteSoftDeletedVersions(inBucket: name, garbageAt: time)
    }
    mutating func session(id: String) throws -> UploadSession? { try base.session(id: id) }
    mutating func insertSession(_ session: UploadSession) throws {
        // It refuses by itself (throws), writing nothing.
        if try base.session(id: session.id) == nil { record("insertSession") }
        try base.insertSession(session)
    }
    mutating func updateSession(_ session: UploadSession) throws {
        record("updateSession \(session.id)")
        try base.updateSession(session)
    }
    mutating func deleteSession(id: String) throws {
        record("deleteSession")
        try base.deleteSession(id: id)
    }
    mutating func addGarbage(_ id: BlobID, at time: Timestamp) throws {
        record("addGarbage \(id.rawValue)")
        try base.addGarbage(id, at: time)
    }
    mutating func removeGarbage(_ id: BlobID) throws {
        record("removeGarbage \(id.rawValue)")
        try base.removeGarbage(id)
    }
    /// Recorded only when it takes the entry: a take that finds none writes nothing.
    mutating func takeGarbage(_ id: BlobID) throws -> Bool {
        let taken = try base.takeGarbage(id)
        if taken { record("takeGarbage \(id.rawValue)") }
        return taken
    }
    mutating func garbageEntry(_ id: BlobID) throws -> GarbageEntry? { try base.garbageEntry(id) }
    mutating func markCollecting(_ id: BlobID, at time: Timestamp) throws {
        record("markCollecting \(id.rawValue)")
        try base.markCollecting(id, at: time)
    }
    mutating func blobIsReferenced(_ id: BlobID) throws -> Bool { try base.blobIsReferenced(id) }
    mutating func insertInlineBlob(_ id: BlobID, _ bytes: [UInt8]) throws {
        record("insertInlineBlob \(id.rawValue)")
        try base.insertInlineBlob(id, bytes)
    }
    mutating func deleteInlineBlob(_ id: BlobID) throws {
        record("deleteInlineBlob \(id.rawValue)")
        try base.deleteInlineBlob(id)
    }
    mutating func deleteAllButDocuments(garbageAt time: Timestamp) throws {
        record("deleteAllButDocuments")
        try base.deleteAllButDocuments(garbageAt: time)
    }
    mutating func document(_ name: String) throws -> String? { try base.document(name) }
    mutating func storeDocument(_ name: String, _ text: String?) throws {
        record("storeDocument")
        try base.storeDocument(name, text)
    }
    mutating func appendEvent(_ event: StorageEvent) throws {
        record("appendEvent")
        try base.appendEvent(event)
    }
    mutating func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws
        -> [OutboxEvent]
    {
        record("claimEvents")
        return try base.claimEvents(owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
    }
    mutating func deleteEvent(_ sequence: Int64) throws {
        record("deleteEvent")
        try base.deleteEvent(sequence)
    }
    mutating func releaseEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws {
        record("releaseEvent")
        try base.releaseEvent(sequence, owner: owner, retryAt: retryAt)
    }
    mutating func outboxStatus() throws -> OutboxStatus { try base.outboxStatus() }
    mutating func addUsage(_ bucket: BucketName, _ delta: BucketUsage) throws {
        record("addUsage")
        try base.addUsage(bucket, delta)
    }
    mutating func bucketUsage() throws -> [BucketName: BucketUsage] { try base.bucketUsage() }
}
