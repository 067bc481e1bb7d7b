import Synchronization

/// A ``MetadataStore`` that remembers live object versions it has read, in front of a store this process owns alone.
///
/// A small GET is one indexed SQLite read, but that read costs a shared lock and an unlock on the WAL index (two
/// `fcntl`s), an `fstat` and the row decoding: about a fifth of the server's CPU per request (`perf`).
/// Every write of object metadata goes through the same ``MetadataStore`` calls, so a cache in front of them is
/// exact as long as no other process writes the store. Use it over a store that nothing else writes (the embedded
/// SQLite database, locked against other processes), or over a shared store that says when this process is its only
/// writer (``SoleWriterObserver``: PostgreSQL's writer lease): made with `soleWriter: false`, it answers from memory
/// only between ``becameSoleWriter(until:)`` and the deadline it was last given, and forgets everything at each change.
///
/// Consistency: a write drops its name before and after the inner call and counts itself in flight; a read stores
/// what it fetched only if no write was in flight when it started and none started or finished meanwhile (the
/// `epoch`). So the cache can miss, but never returns a version older than one a finished write made.
///
/// Only live versions (`generation: nil` lookups, or the generation the cached live version has) are kept, at most
/// `capacity` of them and `maxBytes` of records; past that CLOCK chooses what makes room (``ClockTable``).
public final class CachingMetadataStore: MetadataStore {
    private struct Key: Hashable {
        var bucket: BucketName
        var name: ObjectName

        /// The name alone: a deployment has few buckets, and hashing the bucket's string as well was a second
        /// SipHash pass per lookup, for collisions between same-named objects of two buckets that `==` resolves.
        func hash(into hasher: inout Hasher) { hasher.combine(name) }

        /// For ``StripedCounters``: the name's bytes (same-named objects of two buckets share a stripe, and a
        /// write of one only makes the other's stamp out of date too). Not `hashValue`: that is seeded per process,
        /// which would be fine, but SipHash costs more than this needs.
        var stripeHash: UInt64 { name.rawValue.withUTF8Bytes { $0.spreadHash() } }
    }

    private struct State {
        var live: ClockTable<Key, ObjectRecord>
        var writesInFlight = 0
        var epoch: UInt64 = 0

        /// Forgets `names`, or everything when nil.
        mutating func drop(_ names: [Key]?) {
            guard let names else { return live.removeAll() }
            for name in names { live.removeValue(forKey: name) }
        }
    }

    public let inner: any MetadataStore
    public let capacity: Int
    /// The records kept cost at most this many bytes (``ObjectRecord/approximateBytes``).
    public let maxBytes: Int
    private let state: BlockingMutex<State>
    /// ``cacheStamp(_:_:)``: `changes` counts bucket writes, writes of every object (nil names) and every
    /// ``forgetAll()``; `objectChanges` counts, per stripe of object names, the writes of those objects, when they
    /// start and when they end. So a write of one object leaves the stamps of all but about 1/4,096 of the others
    /// current. Apart from `State.epoch`, which changes only when a write ends (it guards fills), and read without
    /// the lock.
    private let changes = Atomic<UInt64>(0)
    private let objectChanges = StripedCounters(stripes: 4096)
    /// Until when this process is the store's only writer (``MonotonicClock`` nanoseconds): `.max` for good, 0 not.
    private let soleWriterUntil: Atomic<UInt64>
    /// Lookups of live versions: a hit is answered from memory (here or through ``cachedObject(_:_:)`` on an event
    /// loop), a miss asks the inner store. A `cachedObject` miss is not counted: the request then goes to a worker,
    /// whose ``object(_:_:generation:)`` counts it.
    public let lookups = CacheCounters()

    /// `soleWriter`: whether this process is the only writer of `inner` for good (true), or only once told so
    /// (``SoleWriterObserver``).
    public init(_ inner: any MetadataStore, capacity: Int = 10_000, maxBytes: Int = 32 << 20, soleWriter: Bool = true) {
        self.inner = inner
        self.soleWriterUntil = Atomic(soleWriter ? .max : 0)
        self.capacity = max(1, capacity)
        self.maxBytes = max(1, maxBytes)
        state = BlockingMutex(State(live: ClockTable(capacity: self.capacity, maxBytes: self.maxBytes)))
    }

    /// How many live versions are cached now, and what they cost (for tests and diagnostics).
    public var count: Int { state.withLock { $0.live.count } }
    public var bytes: Int { state.withLock { $0.live.bytes } }

    // MARK: Reads that may be served from memory

    /// Whether answers may come from memory now.
    @inline(__always)
    private var isSoleWriter: Bool {
        let until = soleWriterUntil.load(ordering: .acquiring)
        return until == .max || (until != 0 && MonotonicClock.nanoseconds() < until)
    }

    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        guard isSoleWriter else {
            lookups.miss()
            return try inner.object(bucket, name, generation: generation)
        }
        let key = Key(bucket: bucket, name: name)
        let (hit, epoch, quiet) = state.withLock { state in
            (state.live.value(for: key), state.epoch, state.writesInFlight == 0)
        }
        if let hit, generation == nil || generation == hit.generation {
            lookups.hit()
            return hit
        }
        lookups.miss()
        let found = try inner.object(bucket, name, generation: generation)
        // A specific generation says nothing about which version is live, unless the store says it is that one.
        guard quiet, generation == nil, let found else { return found }
        let bytes = found.approximateBytes
        state.withLock { state in
            guard state.epoch == epoch, state.writesInFlight == 0 else { return }
            state.live.insert(found, for: key, cost: bytes)
        }
        return found
    }

    /// The cached live version only: a dictionary lookup under the lock if no other thread holds it, never the inner
    /// store, never a wait (a held lock is a miss).
    public func cachedObject(_ bucket: BucketName, _ name: ObjectName) -> ObjectRecord? {
        guard isSoleWriter else { return nil }
        let hit = state.withLockIfAvailable { $0.live.value(for: Key(bucket: bucket, name: name)) } ?? nil
        if hit != nil { lookups.hit() }
        return hit
    }

    public func cacheStamp(_ bucket: BucketName, _ name: ObjectName) -> CacheStamp? {
        let stripe = objectChanges.stripe(Key(bucket: bucket, name: name).stripeHash)
        // Read before the sole-writer check: a lease that ends after it is seen still changes the stamp.
        let stamp = CacheStamp(
            store: changes.load(ordering: .acquiring), object: objectChanges.load(stripe), stripe: stripe)
        return isSoleWriter ? stamp : nil
    }

    public func isCurrent(_ stamp: CacheStamp) -> Bool {
        changes.load(ordering: .acquiring) == stamp.store
            && objectChanges.load(stamp.stripe) == stamp.object && isSoleWriter
    }

    // MARK: Another writer

    /// Forgets everything and fails the fills of reads under way (their epoch is gone).
    private func forgetAll() {
        state.withLock { state in
            state.drop(nil)
            state.epoch &+= 1
        }
        changes.add(1, ordering: .releasing)
    }

    // MARK: Writes that change object versions

    /// Runs a write of object metadata with the cache out of the way: `names` are dropped before and after, and
    /// reads that overlap it do not fill the cache (nil `names` drops everything).
    /// The names' stamps (every stamp, for nil names) change before the write can be seen and again once it is
    /// done.
    private func writing<Result>(_ names: [Key]?, _ body: () throws -> Result) rethrows -> Result {
        state.withLock { state in
            state.writesInFlight += 1
            state.drop(names)
        }
        stampChanged(names)
        defer {
            state.withLock { state in
                state.writesInFlight -= 1
                state.epoch &+= 1
                state.drop(names)
            }
            stampChanged(names)
        }
        return try body()
    }

    public func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) {
        try writing([Key(bucket: draft.bucket, name: draft.name)]) {
            try inner.insertObject(draft, conditions: conditions, at: time, finalizing: sessionID)
        }
    }

    public func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord {
        try writing([Key(bucket: bucket, name: name)]) {
            try inner.updateObject(bucket, name, generation: generation, conditions: conditions, at: time, change)
        }
    }

    public func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?) {
        try writing([Key(bucket: bucket, name: source), Key(bucket: bucket, name: destination)]) {
            try inner.moveObject(
                bucket, from: source, to: destination, sourceConditions: sourceConditions,
                destinationConditions: destinationConditions, at: time)
        }
    }

    public func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord {
        try writing([Key(bucket: bucket, name: name)]) {
            try inner.deleteObject(
                bucket, name, generation: generation, conditions: conditions, softDeletion: softDeletion)
        }
    }

    public func softDeletedObjects(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [SoftDeletedObject]
    {
        try inner.softDeletedObjects(bucket, prefix: prefix, startAfter: startAfter, limit: limit)
    }

    public func softDeletedObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    {
        try inner.softDeletedObject(bucket, name, generation: generation)
    }

    public func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp,
        replacedSoftDeletion: SoftDeletion?, editing edit: (inout ObjectFields) throws -> Void
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) {
        try writing([Key(bucket: bucket, name: name)]) {
            try inner.restoreObject(
                bucket, name, generation: generation, conditions: conditions, at: time,
                replacedSoftDeletion: replacedSoftDeletion, editing: edit)
        }
    }

    public func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int {
        // Soft-deleted versions are never cached, so nothing here goes stale.
        try inner.purgeSoftDeleted(hardDeletedBy: time, limit: limit)
    }

    public func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?)
        throws
    {
        try writing(nil) { try inner.deleteBucket(name, check: check, softDeletion: softDeletion) }
    }

    public func softDeletedBuckets() throws -> [SoftDeletedBucket] { try inner.softDeletedBuckets() }

    public func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord {
        try writing(nil) { try inner.restoreBucket(name, generation: generation, at: time) }
    }

    public func reset() throws {
        try writing(nil) { try inner.reset() }
    }

    // MARK: Everything else goes straight through

    public func bucket(_ name: BucketName) throws -> BucketRecord? { try inner.bucket(name) }
    public func ensureBucket(_ name: BucketName) throws -> BucketRecord {
        try bucketWrite { try inner.ensureBucket(name) }
    }
    public func buckets() throws -> [BucketRecord] { try inner.buckets() }
    // Bucket writes change no cached version, but an answer replayed under ``cacheStamp`` may have read the bucket.
    public func createBucket(_ template: BucketRecord) throws -> BucketRecord {
        try bucketWrite { try inner.createBucket(template) }
    }
    public func updateBucket(_ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void)
        throws -> BucketRecord
    {
        try bucketWrite { try inner.updateBucket(name, at: time, change) }
    }

    private func bucketWrite<Result>(_ body: () throws -> Result) rethrows -> Result {
        stampChanged(nil)
        defer { stampChanged(nil) }
        return try body()
    }

    private func stampChanged(_ names: [Key]?) {
        guard let names else {
            changes.add(1, ordering: .releasing)
            return
        }
        for name in names { objectChanges.add(objectChanges.stripe(name.stripeHash)) }
    }
    public func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws
        -> [ObjectRecord]
    {
        try inner.listObjects(bucket, prefix: prefix, startAfter: startAfter, limit: limit)
    }
    public func listObjectVersions(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [ObjectRecord]
    {
        try inner.listObjectVersions(bucket, prefix: prefix, startAfter: startAfter, limit: limit)
    }
    public func insertSession(_ session: UploadSession) throws { try inner.insertSession(session) }
    public func session(id: String) throws -> UploadSession? { try inner.session(id: id) }
    public func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession {
        try inner.updateSession(id: id, change)
    }
    public func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession] {
        try inner.sessions(idPrefix: prefix, after: startAfter, limit: limit)
    }
    public func sessions(updatedBefore time: Timestamp) throws -> [UploadSession] {
        try inner.sessions(updatedBefore: time)
    }
    public func deleteSession(id: String) throws { try inner.deleteSession(id: id) }
    public func document(_ name: String) throws -> String? { try inner.document(name) }
    public func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws {
        try inner.updateDocument(name, change)
    }
    public func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        try inner.activeSessionUsage(caller: caller, updatedSince: time)
    }
    public func activeSessionTotals() throws -> SessionUsage { try inner.activeSessionTotals() }
    public func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws {
        try inner.registerPendingBlob(id, at: time)
    }
    public func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        try inner.garbageBlobs(registeredBefore: time, limit: limit)
    }
    public func claimGarbageBlob(_ id: BlobID, registeredBefore cutoff: Timestamp?, at time: Timestamp) throws -> Bool {
        try inner.claimGarbageBlob(id, registeredBefore: cutoff, at: time)
    }
    public func forgetBlob(_ id: BlobID) throws { try inner.forgetBlob(id) }
    public var inlineBlobLimit: Int { inner.inlineBlobLimit }
    public func inlineBlob(_ id: BlobID) throws -> [UInt8]? { try inner.inlineBlob(id) }
    public func isBlobReferenced(_ id: BlobID) throws -> Bool { try inner.isBlobReferenced(id) }
    public func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws
        -> [OutboxEvent]
    { try inner.claimEvents(owner: owner, now: now, leaseUntil: leaseUntil, limit: limit) }
    public func completeEvent(_ sequence: Int64) throws { try inner.completeEvent(sequence) }
    public func retryEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws {
        try inner.retryEvent(sequence, owner: owner, retryAt: retryAt)
    }
    public func outboxStatus() throws -> OutboxStatus { try inner.outboxStatus() }
    public func bucketUsage() throws -> [BucketName: BucketUsage] { try inner.bucketUsage() }
}

extension CachingMetadataStore: SoleWriterObserver {
    public func becameSoleWriter(until deadline: UInt64) {
        // Emptied first: what another writer changed meanwhile was never seen here.
        forgetAll()
        soleWriterUntil.store(deadline, ordering: .releasing)
    }

    public func extendSoleWriter(until deadline: UInt64) {
        soleWriterUntil.store(deadline, ordering: .releasing)
    }

    public func stoppedBeingSoleWriter() {
        soleWriterUntil.store(0, ordering: .releasing)
        forgetAll()
    }
}

/// A fixed number of change counters, one per stripe of keys: what lets a stamp follow one object without a
/// counter per object. Release on add, acquire on load: a reader that sees a count also sees what preceded it.
struct StripedCounters: Sendable {
    private let counters: AtomicCounters

    /// `stripes`: a power of two.
    init(stripes: Int) {
        precondition(stripes > 0 && stripes & (stripes - 1) == 0, "stripes are a power of two")
        counters = AtomicCounters(count: stripes)
    }

    func stripe(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash) & (counters.count - 1) }
    func add(_ stripe: Int) { counters.addReleasing(stripe) }
    func load(_ stripe: Int) -> UInt64 { counters.loadAcquiring(stripe) }
}
