import Synchronization

/// The reference ``MetadataStore``: everything in one `Mutex`-guarded value, so every method is one transaction.
///
/// It is the executable spec the SQLite store is tested against (same conformance suite), and serves `--dev` mode.
/// A `Mutex` rather than an actor because the protocol is synchronous (the HTTP transport calls it from C threads).
/// Its writes are ``TransactionalMetadataStore``'s, over ``InMemoryMetadataRows``.
public final class InMemoryMetadataStore: TransactionalMetadataStore {
    private let state = Mutex(InMemoryMetadataRows())
    private let now: @Sendable () -> Timestamp
    public let recordsEvents: Bool
    public let inlineBlobLimit: Int

    /// - Parameters:
    ///   - now: the clock for times the protocol does not pass in (bucket creation, delete, reset).
    ///   - recordsEvents: whether object writes append storage events to the outbox.
    ///   - inlineBlobLimit: the largest blob kept inline (0: none; the blob store holds every one).
    public init(
        now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }, recordsEvents: Bool = false,
        inlineBlobLimit: Int = 0
    ) {
        self.now = now
        self.recordsEvents = recordsEvents
        self.inlineBlobLimit = inlineBlobLimit
    }

    public func inlineBlob(_ id: BlobID) throws -> [UInt8]? {
        state.withLock { $0.inlineBlobs[id] }
    }

    /// The lock is the transaction. The shared transactions throw only before their first write (see
    /// ``MetadataRows``), so nothing needs undoing.
    public func transaction<Result>(_ body: (inout InMemoryMetadataRows) throws -> Result) throws -> Result {
        try state.withLock { try body(&$0) }
    }

    public func currentTime() -> Timestamp { now() }

    // MARK: Reads

    public func bucket(_ name: BucketName) throws -> BucketRecord? {
        state.withLock { $0.buckets[name] }
    }

    public func buckets() throws -> [BucketRecord] {
        state.withLock { Array($0.buckets.values) }.sorted { $0.name < $1.name }
    }

    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        let key = InMemoryMetadataRows.ObjectKey(bucket: bucket, name: name)
        return state.withLock { state in
            guard let generation else { return state.live(key) }
            return state.objects[key]?.byGeneration[generation]
        }
    }

    public func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws
        -> [ObjectRecord]
    {
        guard limit > 0 else { return [] }
        let prefixBytes = Array(prefix.utf8)
        let matches = state.withLock { state in
            state.objects.compactMap { key, versions -> ObjectRecord? in
                guard key.bucket == bucket, let live = versions.live else { return nil }
                let bytes = key.name.rawValue.utf8
                guard bytes.starts(with: prefixBytes) else { return nil }
                if let startAfter, !startAfter.lexicographicallyPrecedes(bytes) { return nil }
                return versions.byGeneration[live]
            }
        }
        return Array(matches.sorted { $0.name < $1.name }.prefix(limit))
    }

    public func listObjectVersions(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [ObjectRecord]
    {
        guard limit > 0 else { return [] }
        let prefixBytes = Array(prefix.utf8)
        let matches = state.withLock { state in
            state.objects.flatMap { key, versions -> [ObjectRecord] in
                guard key.bucket == bucket, key.name.rawValue.utf8.starts(with: prefixBytes) else { return [] }
                let name = Array(key.name.rawValue.utf8)
                return versions.byGeneration.values.filter { record in
                    startAfter.map { $0 < ObjectVersionKey(name: name, generation: record.generation) } ?? true
                }
            }
        }
        return Array(matches.sorted { ObjectVersionKey($0) < ObjectVersionKey($1) }.prefix(limit))
    }

    public func softDeletedObjects(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [SoftDeletedObject]
    {
        guard limit > 0 else { return [] }
        let prefixBytes = Array(prefix.utf8)
        let matches = state.withLock { state in
            state.softDeleted.values.compactMap { entry -> SoftDeletedObject? in
                let record = entry.object.record
                guard entry.bucket == bucket, record.name.rawValue.utf8.starts(with: prefixBytes) else { return nil }
                let key = ObjectVersionKey(record)
                return startAfter.map { $0 < key } ?? true ? entry.object : nil
            }
        }
        return Array(matches.sorted { ObjectVersionKey($0.record) < ObjectVersionKey($1.record) }.prefix(limit))
    }

    public func softDeletedObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    {
        let key = InMemoryMetadataRows.softKey(bucket, name, generation)
        return state.withLock { $0.softDeleted[key]?.object }
    }

    public func softDeletedBuckets() throws -> [SoftDeletedBucket] {
        state.withLock { state in
            state.softDeletedBuckets.sorted {
                ($0.record.name.rawValue, $0.record.generation) < ($1.record.name.rawValue, $1.record.generation)
            }
        }
    }

    public func session(id: String) throws -> UploadSession? {
        state.withLock { $0.sessions[id] }
    }

    public func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession] {
        guard limit > 0 else { return [] }
        _ = try UploadSession.idRangeEnd(prefix)
        let after = Array((startAfter ?? "").utf8)
        let found = state.withLock { state in
            state.sessions.values.filter {
                $0.id.utf8.starts(with: prefix.utf8) && after.lexicographicallyPrecedes($0.id.utf8)
            }
        }
        return Array(found.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }.prefix(limit))
    }

    public func sessions(updatedBefore time: Timestamp) throws -> [UploadSession] {
        state.withLock { $0.sessions.values.filter { $0.updated < time } }.sorted {
            ($0.updated, $0.id) < ($1.updated, $1.id)
        }
    }

    public func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        state.withLock { state in
            let open = state.sessions.values.filter { $0.caller == caller && $0.state == .active && $0.updated >= time }
            return SessionUsage(sessions: open.count, bytes: open.reduce(0) { $0 + $1.received })
        }
    }

    public func activeSessionTotals() throws -> SessionUsage {
        state.withLock { state in
            let open = state.sessions.values.filter { $0.state == .active }
            return SessionUsage(sessions: open.count, bytes: open.reduce(0) { $0 + $1.received })
        }
    }

    public func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            let candidates = state.garbage.filter { $0.value.registered < time }
            guard !candidates.isEmpty else { return [] }
            var referenced = Set<BlobID>()
            for versions in state.objects.values {
                for record in versions.byGeneration.values { referenced.insert(record.blobID) }
            }
            for session in state.sessions.values where session.state == .active { referenced.insert(session.blobID) }
            for entry in state.softDeleted.values { referenced.insert(entry.object.record.blobID) }
            return candidates.filter { !referenced.contains($0.key) }
                .sorted { ($0.value.registered, $0.key.rawValue) < ($1.value.registered, $1.key.rawValue) }
                .prefix(limit).map(\.key)
        }
    }

    public func isBlobReferenced(_ id: BlobID) throws -> Bool {
        state.withLock { $0.blobIsReferenced(id) }
    }

    public func document(_ name: String) throws -> String? { state.withLock { $0.documents[name] } }
}

/// Everything an ``InMemoryMetadataStore`` holds, and its row operations on it: only ever used inside the store's
/// lock, through ``TransactionalMetadataStore``.
public struct InMemoryMetadataRows: MetadataRows, Sendable {
    fileprivate struct ObjectKey: Hashable, Sendable {
        var bucket: BucketName
        var name: ObjectName
    }

    /// All versions of one name; `live` is the generation of the live version, if any. A name with no version has
    /// no entry, so any key of a bucket means a version in it.
    fileprivate struct Versions: Sendable {
        var live: Int64?
        var byGeneration: [Int64: ObjectRecord] = [:]
    }

    fileprivate var buckets: [BucketName: BucketRecord] = [:]
    fileprivate var objects: [ObjectKey: Versions] = [:]
    fileprivate var sessions: [String: UploadSession] = [:]
    fileprivate var documents: [String: String] = [:]
    fileprivate var softDeleted: [ObjectVersionKey: (bucket: BucketName, object: SoftDeletedObject)] = [:]
    fileprivate var softDeletedBuckets: [SoftDeletedBucket] = []
    /// Pending and replaced blobs with the time they were registered.
    fileprivate var garbage: [BlobID: GarbageEntry] = [:]
    fileprivate var inlineBlobs: [BlobID: [UInt8]] = [:]
    /// Highest generation ever handed out; generations never repeat, even after deletes or reset.
    fileprivate var lastGeneration: Int64 = 0
    /// The event outbox by sequence, and the last sequence handed out (never reused).
    fileprivate var outbox: [Int64: OutboxRow] = [:]
    fileprivate var lastEventSequence: Int64 = 0
    fileprivate var usage: [BucketName: BucketUsage] = [:]

    fileprivate struct OutboxRow: Sendable {
        var event: StorageEvent
        var attempts = 0
        var due: Timestamp
        var leaseOwner: String?
        var leaseUntil: Timestamp?
    }

    fileprivate init() {}

    fileprivate func live(_ key: ObjectKey) -> ObjectRecord? {
        guard let versions = objects[key], let generation = versions.live else { return nil }
        return versions.byGeneration[generation]
    }

    /// Soft-deleted versions of all buckets share one map, so the bucket is part of the key.
    fileprivate static func softKey(_ bucket: BucketName, _ name: ObjectName, _ generation: Int64) -> ObjectVersionKey {
        ObjectVersionKey(name: Array((bucket.rawValue + "/" + name.rawValue).utf8), generation: generation)
    }

    // MARK: Buckets

    public mutating func bucket(_ name: BucketName, lock: BucketLock) -> BucketRecord? { buckets[name] }

    public mutating func ensureBucket(_ name: BucketName, at time: Timestamp) -> BucketRecord {
        if let existing = buckets[name] { return existing }
        let record = BucketRecord(name: name, timeCreated: time, updated: time)
        buckets[name] = record
        return record
    }

    public mutating func insertBucket(_ record: BucketRecord) -> Bool {
        guard buckets[record.name] == nil else { return false }
        buckets[record.name] = record
        return true
    }

    public mutating func updateBucket(_ record: BucketRecord) { buckets[record.name] = record }

    public mutating func bucketHasVersions(_ name: BucketName) -> Bool {
        objects.keys.contains { $0.bucket == name }
    }

    public mutating func deleteBucket(_ name: BucketName, softDeletion: SoftDeletion?) {
        guard let record = buckets.removeValue(forKey: name) else { return }
        if let softDeletion { softDeletedBuckets.append(SoftDeletedBucket(record: record, deletion: softDeletion)) }
    }

    public mutating func softDeletedBucket(_ name: BucketName, generation: Int64) -> BucketRecord? {
        softDeletedBuckets.first { $0.record.name == name && $0.record.generation == generation }?.record
    }

    public mutating func deleteSoftDeletedBucket(_ name: BucketName, generation: Int64) {
        softDeletedBuckets.removeAll { $0.record.name == name && $0.record.generation == generation }
    }

    public mutating func deleteSoftDeletedBuckets(hardDeletedBy time: Timestamp) {
        softDeletedBuckets.removeAll { !(time < $0.deletion.hardDeleteAt) }
    }

    // MARK: Object versions

    /// One writer at a time already: the store's lock.
    public mutating func lockName(_ bucket: BucketName, _ name: ObjectName) {}

    public mutating func liveVersion(_ bucket: BucketName, _ name: ObjectName) -> ObjectRecord? {
        live(ObjectKey(bucket: bucket, name: name))
    }

    public mutating func version(_ bucket: BucketName, _ name: ObjectName, generation: Int64) -> ObjectRecord? {
        objects[ObjectKey(bucket: bucket, name: name)]?.byGeneration[generation]
    }

    public mutating func nextGeneration(for bucket: BucketName, _ name: ObjectName, at time: Timestamp) -> Int64 {
        lastGeneration = max(time.microseconds, lastGeneration + 1)
        return lastGeneration
    }

    public mutating func insertLiveVersion(_ record: ObjectRecord) {
        let key = ObjectKey(bucket: record.bucket, name: record.name)
        objects[key, default: Versions()].byGeneration[record.generation] = record
        objects[key]!.live = record.generation
    }

    public mutating func updateVersion(_ record: ObjectRecord) {
        objects[ObjectKey(bucket: record.bucket, name: record.name)]?.byGeneration[record.generation] = record
    }

    public mutating func markNoncurrent(_ record: ObjectRecord) {
        let key = ObjectKey(bucket: record.bucket, name: record.name)
        if objects[key]?.live == record.generation { objects[key]!.live = nil }
    }

    public mutating func deleteVersion(_ record: ObjectRecord, softDeletion: SoftDeletion?) {
        let key = ObjectKey(bucket: record.bucket, name: record.name)
        guard var versions = objects[key], versions.byGeneration.removeValue(forKey: record.generation) != nil
        else { return }
        if versions.live == record.generation { versions.live = nil }
        objects[key] = versions.byGeneration.isEmpty ? nil : versions
        if let softDeletion {
            softDeleted[Self.softKey(record.bucket, record.name, record.generation)] = (
                record.bucket, SoftDeletedObject(record: record, deletion: softDeletion)
            )
        }
    }

    // MARK: Soft-deleted versions

    public mutating func softDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64)
        -> SoftDeletedObject?
    {
        softDeleted[Self.softKey(bucket, name, generation)]?.object
    }

    public mutating func deleteSoftDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64) {
        softDeleted[Self.softKey(bucket, name, generation)] = nil
    }

    public mutating func deleteSoftDeletedVersions(hardDeletedBy time: Timestamp, limit: Int) -> [BlobID] {
        let due = softDeleted.filter { !(time < $0.value.object.deletion.hardDeleteAt) }.prefix(limit)
        for key in due.map(\.key) { softDeleted[key] = nil }
        return due.map(\.value.object.record.blobID)
    }

    public mutating func deleteSoftDeletedVersions(inBucket name: BucketName, garbageAt time: Timestamp) {
        for (key, entry) in softDeleted where entry.bucket == name {
            softDeleted[key] = nil
            addGarbage(entry.object.record.blobID, at: time)
        }
    }

    // MARK: Upload sessions

    public mutating func session(id: String) -> UploadSession? { sessions[id] }

    public mutating func insertSession(_ session: UploadSession) throws {
        guard sessions[session.id] == nil else { throw StorageError(.alreadyExists, "upload session already exists") }
        sessions[session.id] = session
    }

    public mutating func updateSession(_ session: UploadSession) { sessions[session.id] = session }

    public mutating func deleteSession(id: String) { sessions[id] = nil }

    // MARK: Blob bookkeeping

    public mutating func addGarbage(_ id: BlobID, at time: Timestamp) {
        if garbage[id] == nil { garbage[id] = GarbageEntry(registered: time, collecting: nil) }
    }

    public mutating func removeGarbage(_ id: BlobID) { garbage[id] = nil }

    public mutating func takeGarbage(_ id: BlobID) -> Bool {
        guard let entry = garbage[id], entry.collecting == nil else { return false }
        garbage[id] = nil
        return true
    }

    public mutating func garbageEntry(_ id: BlobID) -> GarbageEntry? { garbage[id] }

    public mutating func markCollecting(_ id: BlobID, at time: Timestamp) { garbage[id]?.collecting = time }

    public mutating func blobIsReferenced(_ id: BlobID) -> Bool {
        objects.values.contains { $0.byGeneration.values.contains { $0.blobID == id } }
            || sessions.values.contains { $0.state == .active && $0.blobID == id }
            || softDeleted.values.contains { $0.object.record.blobID == id }
    }

    public mutating func insertInlineBlob(_ id: BlobID, _ bytes: [UInt8]) { inlineBlobs[id] = bytes }

    public mutating func deleteInlineBlob(_ id: BlobID) { inlineBlobs[id] = nil }

    public mutating func deleteAllButDocuments(garbageAt time: Timestamp) {
        for versions in objects.values {
            for record in versions.byGeneration.values { addGarbage(record.blobID, at: time) }
        }
        for session in sessions.values { addGarbage(session.blobID, at: time) }
        for entry in softDeleted.values { addGarbage(entry.object.record.blobID, at: time) }
        softDeleted = [:]
        softDeletedBuckets = []
        objects = [:]
        sessions = [:]
        buckets = [:]
        usage = [:]
    }

    // MARK: Documents

    public mutating func document(_ name: String) -> String? { documents[name] }

    public mutating func storeDocument(_ name: String, _ text: String?) { documents[name] = text }

    // MARK: Event outbox and usage

    public mutating func appendEvent(_ event: StorageEvent) {
        lastEventSequence += 1
        outbox[lastEventSequence] = OutboxRow(event: event, due: event.time)
    }

    public mutating func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int)
        -> [OutboxEvent]
    {
        let due = outbox.filter { _, row in row.due <= now && (row.leaseUntil.map { $0 <= now } ?? true) }
            .keys.sorted().prefix(limit)
        return due.map { sequence in
            outbox[sequence]!.leaseOwner = owner
            outbox[sequence]!.leaseUntil = leaseUntil
            let row = outbox[sequence]!
            return OutboxEvent(sequence: sequence, event: row.event, attempts: row.attempts)
        }
    }

    public mutating func deleteEvent(_ sequence: Int64) { outbox[sequence] = nil }

    public mutating func releaseEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) {
        guard var row = outbox[sequence], row.leaseOwner == owner else { return }
        row.attempts += 1
        row.due = retryAt
        row.leaseOwner = nil
        row.leaseUntil = nil
        outbox[sequence] = row
    }

    public mutating func outboxStatus() -> OutboxStatus {
        OutboxStatus(pending: outbox.count, oldest: outbox.values.map(\.event.time).min())
    }

    public mutating func addUsage(_ bucket: BucketName, _ delta: BucketUsage) { usage[bucket, default: .zero] += delta }

    public mutating func bucketUsage() -> [BucketName: BucketUsage] {
        Dictionary(uniqueKeysWithValues: buckets.keys.map { ($0, usage[$0] ?? .zero) })
    }
}
