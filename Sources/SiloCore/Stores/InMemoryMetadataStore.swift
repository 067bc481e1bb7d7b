import Synchronization

/// The reference ``MetadataStore``: everything in one `Mutex`-guarded value, so every method is one transaction.
///
/// It is the executable spec the SQLite store is tested against (same conformance suite), and serves `--dev` mode.
/// A `Mutex` rather than an actor because the protocol is synchronous (the HTTP transport calls it from C threads).
public final class InMemoryMetadataStore: MetadataStore {
    private struct ObjectKey: Hashable {
        var bucket: BucketName
        var name: ObjectName
    }

    /// All versions of one name; `live` is the generation of the live version, if any.
    private struct Versions {
        var live: Int64?
        var byGeneration: [Int64: ObjectRecord] = [:]
    }

    private struct State {
        var buckets: [BucketName: BucketRecord] = [:]
        var objects: [ObjectKey: Versions] = [:]
        var sessions: [String: UploadSession] = [:]
        var documents: [String: String] = [:]
        var softDeleted: [ObjectVersionKey: (bucket: BucketName, object: SoftDeletedObject)] = [:]
        var softDeletedBuckets: [SoftDeletedBucket] = []
        /// Pending and replaced blobs with the time they were registered.
        var garbage: [BlobID: Timestamp] = [:]
        /// Highest generation ever handed out; generations never repeat, even after deletes or reset.
        var lastGeneration: Int64 = 0

        func live(_ key: ObjectKey) -> ObjectRecord? {
            guard let versions = objects[key], let generation = versions.live else { return nil }
            return versions.byGeneration[generation]
        }

        mutating func addGarbage(_ id: BlobID, at time: Timestamp) {
            if garbage[id] == nil { garbage[id] = time }
        }

        /// The live version a write replaces: kept noncurrent in a versioned bucket, else removed (``remove``).
        mutating func retire(
            _ current: ObjectRecord, in versions: inout Versions, versioning: Bool, softDeletion: SoftDeletion?,
            at time: Timestamp
        ) {
            versions.live = nil
            guard !versioning else { return }
            versions.byGeneration[current.generation] = nil
            remove(current, softDeletion: softDeletion, at: time)
        }

        /// A version leaves its name: among the soft-deleted versions when `softDeletion` is given, else for good
        /// (its blob becomes garbage).
        mutating func remove(_ record: ObjectRecord, softDeletion: SoftDeletion?, at time: Timestamp) {
            if let softDeletion {
                softDeleted[InMemoryMetadataStore.versionKey(record.bucket, record)] = (
                    record.bucket, SoftDeletedObject(record: record, deletion: softDeletion)
                )
            } else {
                addGarbage(record.blobID, at: time)
            }
        }

        mutating func ensureBucket(_ name: BucketName, at time: Timestamp) -> BucketRecord {
            if let existing = buckets[name] { return existing }
            let record = BucketRecord(name: name, timeCreated: time, updated: time)
            buckets[name] = record
            return record
        }
    }

    private let state = Mutex(State())
    private let now: @Sendable () -> Timestamp

    /// - Parameter now: the clock for times the protocol does not pass in (bucket creation, delete, reset).
    public init(now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) {
        self.now = now
    }

    // MARK: Buckets

    public func bucket(_ name: BucketName) throws -> BucketRecord? {
        state.withLock { $0.buckets[name] }
    }

    public func ensureBucket(_ name: BucketName) throws -> BucketRecord {
        let time = now()
        return state.withLock { $0.ensureBucket(name, at: time) }
    }

    public func buckets() throws -> [BucketRecord] {
        state.withLock { Array($0.buckets.values) }.sorted { $0.name < $1.name }
    }

    public func createBucket(_ template: BucketRecord) throws -> BucketRecord {
        try state.withLock { state in
            guard state.buckets[template.name] == nil else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(template.name.rawValue)")
            }
            let record = BucketRecord(
                name: template.name, timeCreated: template.timeCreated, updated: template.timeCreated,
                versioning: template.versioning, resource: template.resource)
            state.buckets[template.name] = record
            return record
        }
    }

    public func updateBucket(
        _ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void
    ) throws -> BucketRecord {
        try state.withLock { state in
            guard let stored = state.buckets[name] else {
                throw StorageError(.notFound, "No such bucket: \(name.rawValue)")
            }
            var record = stored
            try change(&record)
            guard record.name == name else { throw StorageError(.invalidArgument, "a bucket's name cannot change") }
            // The store owns these, whatever `change` did to them.
            record.timeCreated = stored.timeCreated
            record.generation = stored.generation
            record.metageneration = stored.metageneration + 1
            record.updated = time
            state.buckets[name] = record
            return record
        }
    }

    public func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?)
        throws
    {
        try state.withLock { state in
            guard let bucket = state.buckets[name] else {
                throw StorageError(.notFound, "No such bucket: \(name.rawValue)")
            }
            try check(bucket)
            // `objects` only holds names with at least one version, so any key in the bucket means a version.
            guard !state.objects.keys.contains(where: { $0.bucket == name }) else {
                throw StorageError(.conflict, "The bucket you tried to delete is not empty: \(name.rawValue)")
            }
            for (key, entry) in state.softDeleted where entry.bucket == name {
                state.softDeleted[key] = nil
                state.addGarbage(entry.object.record.blobID, at: now())
            }
            if let softDeletion {
                state.softDeletedBuckets.append(SoftDeletedBucket(record: bucket, deletion: softDeletion))
            }
            state.buckets[name] = nil
        }
    }

    // MARK: Objects

    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        let key = ObjectKey(bucket: bucket, name: name)
        return state.withLock { state in
            guard let generation else { return state.live(key) }
            return state.objects[key]?.byGeneration[generation]
        }
    }

    public func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) {
        let key = ObjectKey(bucket: draft.bucket, name: draft.name)
        return try state.withLock { state in
            let current = state.live(key)
            try conditions.check(current, describing: describe(draft.bucket, draft.name))
            var session: UploadSession?
            if let sessionID {
                guard let found = state.sessions[sessionID] else {
                    throw StorageError(.notFound, "No such upload session")
                }
                guard found.state == .active else { throw UploadSession.notActive(sessionID, state: found.state) }
                session = found
            }
            // Objects imply their bucket, as in the Firebase emulator.
            guard draft.createsBucket || state.buckets[draft.bucket] != nil else {
                throw StorageError.noSuchBucket(draft.bucket)
            }
            let bucket = state.ensureBucket(draft.bucket, at: time)
            let generation = max(time.microseconds, state.lastGeneration + 1)
            state.lastGeneration = generation
            var versions = state.objects[key] ?? Versions()
            if let current {
                state.retire(
                    current, in: &versions, versioning: bucket.versioning, softDeletion: draft.replacedSoftDeletion,
                    at: time)
            }
            let stored = ObjectRecord(
                bucket: draft.bucket, name: draft.name, generation: generation, metageneration: 1, blob: draft.blob,
                blobID: draft.blobID, fields: draft.fields, timeCreated: time, updated: time,
                componentCount: draft.componentCount)
            versions.byGeneration[generation] = stored
            versions.live = generation
            state.objects[key] = versions
            state.garbage[draft.blobID] = nil
            if let session { state.sessions[session.id] = session.finalized(generation: generation, at: time) }
            return (stored, current)
        }
    }

    public func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord {
        let key = ObjectKey(bucket: bucket, name: name)
        return try state.withLock { state in
            let found = generation.map { state.objects[key]?.byGeneration[$0] } ?? state.live(key)
            guard var record = found else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, name))")
            }
            try conditions.check(record, describing: describe(bucket, name))
            try change(&record.fields)
            record.metageneration += 1
            record.updated = time
            state.objects[key]!.byGeneration[record.generation] = record
            return record
        }
    }

    public func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?) {
        let from = ObjectKey(bucket: bucket, name: source)
        let to = ObjectKey(bucket: bucket, name: destination)
        return try state.withLock { state in
            guard let moving = state.live(from) else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, source))")
            }
            try sourceConditions.check(moving, describing: describe(bucket, source))
            let current = state.live(to)
            try destinationConditions.check(current, describing: describe(bucket, destination))
            let versioning = state.buckets[bucket]?.versioning ?? false
            // The source leaves as a delete would; its blob goes with the new version, so it is not garbage.
            var sourceVersions = state.objects[from]!
            sourceVersions.live = nil
            if !versioning { sourceVersions.byGeneration[moving.generation] = nil }
            state.objects[from] = sourceVersions.byGeneration.isEmpty ? nil : sourceVersions
            var versions = state.objects[to] ?? Versions()
            if let current {
                state.retire(current, in: &versions, versioning: versioning, softDeletion: nil, at: time)
            }
            let generation = max(time.microseconds, state.lastGeneration + 1)
            state.lastGeneration = generation
            let moved = ObjectRecord(
                bucket: bucket, name: destination, generation: generation, metageneration: 1, blob: moving.blob,
                blobID: moving.blobID, fields: moving.fields, timeCreated: time, updated: time,
                componentCount: moving.componentCount)
            versions.byGeneration[generation] = moved
            versions.live = generation
            state.objects[to] = versions
            return (moved, current)
        }
    }

    public func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord {
        let key = ObjectKey(bucket: bucket, name: name)
        let time = now()
        return try state.withLock { state in
            guard var versions = state.objects[key],
                let target = (generation ?? versions.live).flatMap({ versions.byGeneration[$0] })
            else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, name))")
            }
            try conditions.check(target, describing: describe(bucket, name))
            let versioning = state.buckets[bucket]?.versioning ?? false
            if target.generation == versions.live { versions.live = nil }
            if generation == nil && versioning {
                // Deleting the live version of a versioned object keeps it as a noncurrent version (GCS).
            } else {
                versions.byGeneration[target.generation] = nil
                state.remove(target, softDeletion: softDeletion, at: time)
            }
            state.objects[key] = versions.byGeneration.isEmpty ? nil : versions
            return target
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

    // MARK: Soft delete

    /// Soft-deleted versions of all buckets share one map, so the bucket is part of the key.
    fileprivate static func versionKey(_ bucket: BucketName, _ record: ObjectRecord) -> ObjectVersionKey {
        ObjectVersionKey(
            name: Array((bucket.rawValue + "/" + record.name.rawValue).utf8), generation: record.generation)
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
        state.withLock { state in
            state.softDeleted.values.first {
                $0.bucket == bucket && $0.object.record.name == name && $0.object.record.generation == generation
            }?.object
        }
    }

    public func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) {
        let key = ObjectKey(bucket: bucket, name: name)
        return try state.withLock { state in
            guard
                let (softKey, entry) = state.softDeleted.first(where: {
                    $0.value.bucket == bucket && $0.value.object.record.name == name
                        && $0.value.object.record.generation == generation
                })
            else {
                throw StorageError(.notFound, "No such soft-deleted object: \(describe(bucket, name))#\(generation)")
            }
            let current = state.live(key)
            try conditions.check(current, describing: describe(bucket, name))
            let versioning = state.buckets[bucket]?.versioning ?? false
            var versions = state.objects[key] ?? Versions()
            if let current {
                state.retire(current, in: &versions, versioning: versioning, softDeletion: nil, at: time)
            }
            state.softDeleted[softKey] = nil
            let newGeneration = max(time.microseconds, state.lastGeneration + 1)
            state.lastGeneration = newGeneration
            let old = entry.object.record
            let restored = ObjectRecord(
                bucket: bucket, name: name, generation: newGeneration, metageneration: 1, blob: old.blob,
                blobID: old.blobID, fields: old.fields, timeCreated: time, updated: time,
                componentCount: old.componentCount)
            versions.byGeneration[newGeneration] = restored
            versions.live = newGeneration
            state.objects[key] = versions
            return (restored, current)
        }
    }

    public func softDeletedBuckets() throws -> [SoftDeletedBucket] {
        state.withLock { state in
            state.softDeletedBuckets.sorted {
                ($0.record.name.rawValue, $0.record.generation) < ($1.record.name.rawValue, $1.record.generation)
            }
        }
    }

    public func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord {
        try state.withLock { state in
            guard
                let index = state.softDeletedBuckets.firstIndex(where: {
                    $0.record.name == name && $0.record.generation == generation
                })
            else { throw StorageError(.notFound, "No such soft-deleted bucket: \(name.rawValue)#\(generation)") }
            guard state.buckets[name] == nil else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(name.rawValue)")
            }
            let record = state.softDeletedBuckets.remove(at: index).record
            state.buckets[name] = record
            return record
        }
    }

    public func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int {
        state.withLock { state in
            state.softDeletedBuckets.removeAll { !(time < $0.deletion.hardDeleteAt) }
            let due = state.softDeleted.filter { !(time < $0.value.object.deletion.hardDeleteAt) }.prefix(limit)
            for (key, entry) in due {
                state.softDeleted[key] = nil
                state.addGarbage(entry.object.record.blobID, at: time)
            }
            return due.count
        }
    }

    // MARK: Upload sessions

    public func insertSession(_ session: UploadSession) throws {
        try state.withLock { state in
            guard state.sessions[session.id] == nil else {
                throw StorageError(.alreadyExists, "upload session already exists")
            }
            state.sessions[session.id] = session
        }
    }

    public func session(id: String) throws -> UploadSession? {
        state.withLock { $0.sessions[id] }
    }

    public func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession {
        try state.withLock { state in
            guard var session = state.sessions[id] else {
                throw StorageError(.notFound, "No such upload session")
            }
            try change(&session)
            guard session.id == id else { throw StorageError(.invalidArgument, "an upload session's id cannot change") }
            state.sessions[id] = session
            return session
        }
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

    public func deleteSession(id: String) throws {
        state.withLock { _ = $0.sessions.removeValue(forKey: id) }
    }

    public func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        state.withLock { state in
            let open = state.sessions.values.filter { $0.caller == caller && $0.state == .active && $0.updated >= time }
            return SessionUsage(sessions: open.count, bytes: open.reduce(0) { $0 + $1.received })
        }
    }

    // MARK: Blob bookkeeping

    public func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws {
        state.withLock { $0.addGarbage(id, at: time) }
    }

    public func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            let candidates = state.garbage.filter { $0.value < time }
            guard !candidates.isEmpty else { return [] }
            var referenced = Set<BlobID>()
            for versions in state.objects.values {
                for record in versions.byGeneration.values { referenced.insert(record.blobID) }
            }
            for session in state.sessions.values where session.state == .active { referenced.insert(session.blobID) }
            return candidates.filter { !referenced.contains($0.key) }
                .sorted { ($0.value, $0.key.rawValue) < ($1.value, $1.key.rawValue) }
                .prefix(limit).map(\.key)
        }
    }

    public func forgetBlob(_ id: BlobID) throws {
        state.withLock { _ = $0.garbage.removeValue(forKey: id) }
    }

    public func isBlobReferenced(_ id: BlobID) throws -> Bool {
        state.withLock { state in
            state.objects.values.contains { $0.byGeneration.values.contains { $0.blobID == id } }
                || state.sessions.values.contains { $0.state == .active && $0.blobID == id }
                || state.softDeleted.values.contains { $0.object.record.blobID == id }
        }
    }

    public func reset() throws {
        let time = now()
        state.withLock { state in
            for versions in state.objects.values {
                for record in versions.byGeneration.values { state.addGarbage(record.blobID, at: time) }
            }
            for session in state.sessions.values { state.addGarbage(session.blobID, at: time) }
            for entry in state.softDeleted.values { state.addGarbage(entry.object.record.blobID, at: time) }
            state.softDeleted = [:]
            state.softDeletedBuckets = []
            state.objects = [:]
            state.sessions = [:]
            state.buckets = [:]
        }
    }

    // MARK: Documents

    public func document(_ name: String) throws -> String? { state.withLock { $0.documents[name] } }

    public func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws {
        try state.withLock { state in
            var text = state.documents[name]
            try change(&text)
            state.documents[name] = text
        }
    }
}

private func describe(_ bucket: BucketName, _ name: ObjectName) -> String {
    "\(bucket.rawValue)/\(name.rawValue)"
}
