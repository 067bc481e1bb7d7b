public import SiloCore
import Synchronization

/// One call a server made to a store, as fault-injection hooks see it.
public struct StoreCall: Sendable, Equatable, CustomStringConvertible {
    /// The protocol method (`insertObject`, `updateSession`, `write`, `sync`, …).
    public var method: String
    /// `bucket/name` for object calls, the session or blob id otherwise, when there is one.
    public var subject: String?

    public init(_ method: String, _ subject: String? = nil) {
        self.method = method
        self.subject = subject
    }

    public var description: String { subject.map { "\(method)(\($0))" } ?? method }
}

/// When a hook runs: before the call reaches the real store, or after it returned (the store did the work).
public enum CallMoment: Sendable, Equatable {
    case before
    case after
}

/// Runs hooks around every store call and records the calls, for the fault-injection tests: a hook can
/// throw before a call (the store never sees it: ENOSPC, a refused connection), throw after it (the store did it
/// but the caller hears of a failure: a commit whose answer a dropped PostgreSQL connection lost), or do something
/// in between (a racing request). Thread-safe; hooks run on the calling thread.
public final class StoreCallHooks: Sendable {
    public typealias Hook = @Sendable (StoreCall, CallMoment) throws -> Void

    private struct State {
        var hook: Hook?
        var recording = false
        var calls: [StoreCall] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Replaces the hook (nil removes it).
    public func set(_ hook: Hook?) { state.withLock { $0.hook = hook } }

    /// Starts recording calls (clearing what was recorded).
    public func record() {
        state.withLock {
            $0.recording = true
            $0.calls = []
        }
    }

    /// The calls recorded since `record()`, and stops recording.
    public func recorded() -> [StoreCall] {
        state.withLock {
            $0.recording = false
            return $0.calls
        }
    }

    func around<Result>(_ call: StoreCall, _ body: () throws -> Result) throws -> Result {
        let hook = state.withLock { state -> Hook? in
            if state.recording { state.calls.append(call) }
            return state.hook
        }
        try hook?(call, .before)
        let result = try body()
        try hook?(call, .after)
        return result
    }
}

/// A ``MetadataStore`` that passes every call to `inner` through ``StoreCallHooks``.
public final class FaultInjectingMetadataStore: MetadataStore {
    public let inner: any MetadataStore
    public let hooks: StoreCallHooks

    public init(_ inner: any MetadataStore, hooks: StoreCallHooks) {
        self.inner = inner
        self.hooks = hooks
    }

    private func object(_ method: String, _ bucket: BucketName, _ name: ObjectName) -> StoreCall {
        StoreCall(method, "\(bucket)/\(name)")
    }

    public func bucket(_ name: BucketName) throws -> BucketRecord? {
        try hooks.around(StoreCall("bucket", name.rawValue)) { try inner.bucket(name) }
    }
    public func ensureBucket(_ name: BucketName) throws -> BucketRecord {
        try hooks.around(StoreCall("ensureBucket", name.rawValue)) { try inner.ensureBucket(name) }
    }
    public func buckets() throws -> [BucketRecord] {
        try hooks.around(StoreCall("buckets")) { try inner.buckets() }
    }
    public func createBucket(_ template: BucketRecord) throws -> BucketRecord {
        try hooks.around(StoreCall("createBucket", template.name.rawValue)) { try inner.createBucket(template) }
    }
    public func updateBucket(_ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void)
        throws -> BucketRecord
    {
        try hooks.around(StoreCall("updateBucket", name.rawValue)) { try inner.updateBucket(name, at: time, change) }
    }
    public func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?)
        throws
    {
        try hooks.around(StoreCall("deleteBucket", name.rawValue)) {
            try inner.deleteBucket(name, check: check, softDeletion: softDeletion)
        }
    }
    public func softDeletedBuckets() throws -> [SoftDeletedBucket] {
        try hooks.around(StoreCall("softDeletedBuckets")) { try inner.softDeletedBuckets() }
    }
    public func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord {
        try hooks.around(StoreCall("restoreBucket", name.rawValue)) {
            try inner.restoreBucket(name, generation: generation, at: time)
        }
    }
    /// Passed through without hooks or a record: a memory lookup, no store call (what answers cache hits inline).
    public func cachedObject(_ bucket: BucketName, _ name: ObjectName) -> ObjectRecord? {
        inner.cachedObject(bucket, name)
    }
    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        try hooks.around(object("object", bucket, name)) { try inner.object(bucket, name, generation: generation) }
    }
    public func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) {
        let result = try hooks.around(object("insertObject", draft.bucket, draft.name)) {
            let (stored, replaced) = try inner.insertObject(
                draft, conditions: conditions, at: time, finalizing: sessionID)
            return Inserted(stored: stored, replaced: replaced)
        }
        return (result.stored, result.replaced)
    }
    public func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord {
        try hooks.around(object("updateObject", bucket, name)) {
            try inner.updateObject(bucket, name, generation: generation, conditions: conditions, at: time, change)
        }
    }
    public func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?) {
        let result = try hooks.around(object("moveObject", bucket, source)) {
            let (moved, replaced) = try inner.moveObject(
                bucket, from: source, to: destination, sourceConditions: sourceConditions,
                destinationConditions: destinationConditions, at: time)
            return Inserted(stored: moved, replaced: replaced)
        }
        return (result.stored, result.replaced)
    }
    public func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord {
        try hooks.around(object("deleteObject", bucket, name)) {
            try inner.deleteObject(
                bucket, name, generation: generation, conditions: conditions, softDeletion: softDeletion)
        }
    }

    public func softDeletedObjects(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [SoftDeletedObject]
    {
        try hooks.around(StoreCall("softDeletedObjects", bucket.rawValue)) {
            try inner.softDeletedObjects(bucket, prefix: prefix, startAfter: startAfter, limit: limit)
        }
    }

    public func softDeletedObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    {
        try hooks.around(object("softDeletedObject", bucket, name)) {
            try inner.softDeletedObject(bucket, name, generation: generation)
        }
    }

    public func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp,
        replacedSoftDeletion: SoftDeletion?, editing edit: (inout ObjectFields) throws -> Void
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) {
        try hooks.around(object("restoreObject", bucket, name)) {
            try inner.restoreObject(
                bucket, name, generation: generation, conditions: conditions, at: time,
                replacedSoftDeletion: replacedSoftDeletion, editing: edit)
        }
    }

    public func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int {
        try hooks.around(StoreCall("purgeSoftDeleted")) {
            try inner.purgeSoftDeleted(hardDeletedBy: time, limit: limit)
        }
    }
    public func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws
        -> [ObjectRecord]
    {
        try hooks.around(StoreCall("listObjects", bucket.rawValue)) {
            try inner.listObjects(bucket, prefix: prefix, startAfter: startAfter, limit: limit)
        }
    }
    public func listObjectVersions(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [ObjectRecord]
    {
        try hooks.around(StoreCall("listObjectVersions", bucket.rawValue)) {
            try inner.listObjectVersions(bucket, prefix: prefix, startAfter: startAfter, limit: limit)
        }
    }
    public func insertSession(_ session: UploadSession) throws {
        try hooks.around(StoreCall("insertSession", session.id)) { try inner.insertSession(session) }
    }
    public func session(id: String) throws -> UploadSession? {
        try hooks.around(StoreCall("session", id)) { try inner.session(id: id) }
    }
    public func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession {
        try hooks.around(StoreCall("updateSession", id)) { try inner.updateSession(id: id, change) }
    }
    public func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession] {
        try hooks.around(StoreCall("sessionsWithPrefix", prefix)) {
            try inner.sessions(idPrefix: prefix, after: startAfter, limit: limit)
        }
    }
    public func sessions(updatedBefore time: Timestamp) throws -> [UploadSession] {
        try hooks.around(StoreCall("sessions")) { try inner.sessions(updatedBefore: time) }
    }
    public func deleteSession(id: String) throws {
        try hooks.around(StoreCall("deleteSession", id)) { try inner.deleteSession(id: id) }
    }
    public func document(_ name: String) throws -> String? {
        try hooks.around(StoreCall("document", name)) { try inner.document(name) }
    }
    public func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws {
        try hooks.around(StoreCall("updateDocument", name)) { try inner.updateDocument(name, change) }
    }
    public func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        try hooks.around(StoreCall("activeSessionUsage", caller)) {
            try inner.activeSessionUsage(caller: caller, updatedSince: time)
        }
    }
    public func activeSessionTotals() throws -> SessionUsage {
        try hooks.around(StoreCall("activeSessionTotals")) { try inner.activeSessionTotals() }
    }
    public func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws {
        try hooks.around(StoreCall("registerPendingBlob", id.rawValue)) { try inner.registerPendingBlob(id, at: time) }
    }
    public func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        try hooks.around(StoreCall("garbageBlobs")) { try inner.garbageBlobs(registeredBefore: time, limit: limit) }
    }
    public func claimGarbageBlob(_ id: BlobID, registeredBefore cutoff: Timestamp?, at time: Timestamp) throws -> Bool {
        try hooks.around(StoreCall("claimGarbageBlob", id.rawValue)) {
            try inner.claimGarbageBlob(id, registeredBefore: cutoff, at: time)
        }
    }
    public func forgetBlob(_ id: BlobID) throws {
        try hooks.around(StoreCall("forgetBlob", id.rawValue)) { try inner.forgetBlob(id) }
    }
    public var inlineBlobLimit: Int { inner.inlineBlobLimit }
    public func inlineBlob(_ id: BlobID) throws -> [UInt8]? {
        try hooks.around(StoreCall("inlineBlob", id.rawValue)) { try inner.inlineBlob(id) }
    }
    public func isBlobReferenced(_ id: BlobID) throws -> Bool {
        try hooks.around(StoreCall("isBlobReferenced", id.rawValue)) { try inner.isBlobReferenced(id) }
    }
    public func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws
        -> [OutboxEvent]
    {
        try hooks.around(StoreCall("claimEvents", owner)) {
            try inner.claimEvents(owner: owner, now: now, leaseUntil: leaseUntil, limit: limit)
        }
    }
    public func completeEvent(_ sequence: Int64) throws {
        try hooks.around(StoreCall("completeEvent", String(sequence))) { try inner.completeEvent(sequence) }
    }
    public func retryEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws {
        try hooks.around(StoreCall("retryEvent", String(sequence))) {
            try inner.retryEvent(sequence, owner: owner, retryAt: retryAt)
        }
    }
    public func outboxStatus() throws -> OutboxStatus {
        try hooks.around(StoreCall("outboxStatus")) { try inner.outboxStatus() }
    }
    public func bucketUsage() throws -> [BucketName: BucketUsage] {
        try hooks.around(StoreCall("bucketUsage")) { try inner.bucketUsage() }
    }
    public func reset() throws {
        try hooks.around(StoreCall("reset")) { try inner.reset() }
    }
}

/// A named pair: tuples with non-Sendable-checked labels do not pass through the generic `around`.
private struct Inserted {
    var stored: ObjectRecord
    var replaced: ObjectRecord?
}
