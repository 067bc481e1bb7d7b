/// A ``MetadataStore`` whose writes are the transactions below, run over its ``MetadataRows``: the one place the
/// write logic lives (preconditions, ensuring the bucket, replacing the live version, the garbage list, generation
/// numbering, deletes, patches, moves, restores, sessions, documents). A backend supplies its reads, its row
/// operations and ``transaction(_:)``, and gets every write of ``MetadataStore`` from here.
public protocol TransactionalMetadataStore: MetadataStore {
    associatedtype Rows: MetadataRows

    /// Runs `body` in one transaction, all of it or none: committed when `body` returns, rolled back when it throws.
    /// A backend may run `body` again from the start (a retried transaction), so it depends only on the rows.
    func transaction<Result>(_ body: (inout Rows) throws -> Result) throws -> Result

    /// The clock for times the protocol does not pass in (bucket creation, delete, reset).
    func currentTime() -> Timestamp

    /// Whether object writes also append their ``StorageEvent``s to the outbox. Off unless something delivers
    /// them (`silo serve --event-webhook`): nothing else would empty the outbox.
    var recordsEvents: Bool { get }
}

extension TransactionalMetadataStore {
    // MARK: Buckets

    public func ensureBucket(_ name: BucketName) throws -> BucketRecord {
        // Nearly always there already: a read, which takes no writer.
        if let existing = try bucket(name) { return existing }
        let time = currentTime()
        return try transaction { try $0.ensureBucket(name, at: time) }
    }

    public func createBucket(_ template: BucketRecord) throws -> BucketRecord {
        let record = BucketRecord(
            name: template.name, timeCreated: template.timeCreated, updated: template.timeCreated,
            versioning: template.versioning, resource: template.resource)
        return try transaction { rows in
            guard try rows.insertBucket(record) else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(template.name.rawValue)")
            }
            return record
        }
    }

    public func updateBucket(
        _ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void
    ) throws -> BucketRecord {
        try transaction { rows in
            guard let stored = try rows.bucket(name, lock: .update) else { throw noBucket(name) }
            var record = stored
            try change(&record)
            guard record.name == name else { throw StorageError(.invalidArgument, "a bucket's name cannot change") }
            // The store owns these, whatever `change` did to them.
            record.timeCreated = stored.timeCreated
            record.generation = stored.generation
            record.metageneration = stored.metageneration + 1
            record.updated = time
            try rows.updateBucket(record)
            return record
        }
    }

    public func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?)
        throws
    {
        let time = currentTime()
        try transaction { rows in
            // The update lock waits for writes that hold the bucket share-locked; their objects are then visible.
            guard let bucket = try rows.bucket(name, lock: .update) else { throw noBucket(name) }
            try check(bucket)
            guard try !rows.bucketHasVersions(name) else {
                throw StorageError(.conflict, "The bucket you tried to delete is not empty: \(name.rawValue)")
            }
            try rows.deleteSoftDeletedVersions(inBucket: name, garbageAt: time)
            try rows.deleteBucket(name, softDeletion: softDeletion)
        }
    }

    public func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord {
        try transaction { rows in
            guard let record = try rows.softDeletedBucket(name, generation: generation) else {
                throw StorageError(.notFound, "No such soft-deleted bucket: \(name.rawValue)#\(generation)")
            }
            guard try rows.insertBucket(record) else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(name.rawValue)")
            }
            try rows.deleteSoftDeletedBucket(name, generation: generation)
            return record
        }
    }

    // MARK: Objects

    public func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) {
        try transaction { rows in
            try rows.lockName(draft.bucket, draft.name)
            let current = try rows.liveVersion(draft.bucket, draft.name)
            try conditions.check(current, describing: describe(draft.bucket, draft.name))
            // Locked, so a finalize of the same session on another node waits and then finds it final.
            let session = try sessionID.map { try rows.activeSession($0) }
            let found = draft.createsBucket ? nil : try rows.bucket(draft.bucket, lock: .share)
            guard draft.createsBucket || found != nil else { throw StorageError.noSuchBucket(draft.bucket) }
            if let bytes = draft.inlineBytes {
                // Bytes that arrive with their version were never registered, so no collection can have them.
                try checkInline(draft.blobID, bytes, for: describe(draft.bucket, draft.name))
                try rows.insertInlineBlob(draft.blobID, bytes)
            } else {
                // The first write, so a refusal writes nothing: a collection that claimed the bytes first wins.
                try rows.holdUploadedBlob(draft.blobID, for: describe(draft.bucket, draft.name))
            }
            // Objects imply their bucket, as in the Firebase emulator, unless the write says otherwise.
            let bucket = try found ?? rows.ensureBucket(draft.bucket, at: time)
            var changes = Changes(bucket: draft.bucket, time: time)
            if let current {
                try rows.retire(
                    current, versioning: bucket.versioning, softDeletion: draft.replacedSoftDeletion, at: time,
                    keeping: draft.blobID, into: &changes)
            }
            // Late, so PostgreSQL's counter row (shared by the names of one stripe, on every node) stays locked briefly.
            let generation = try rows.nextGeneration(for: draft.bucket, draft.name, at: time)
            let stored = ObjectRecord(
                bucket: draft.bucket, name: draft.name, generation: generation, metageneration: 1, blob: draft.blob,
                blobID: draft.blobID, fields: draft.fields, timeCreated: time, updated: time,
                componentCount: draft.componentCount)
            try rows.insertLiveVersion(stored)
            changes.finalized(stored)
            if let session {
                try rows.updateSession(session.finalized(generation: generation, at: time, received: draft.blob.size))
            }
            try changes.write(to: &rows, events: recordsEvents)
            return (stored, current)
        }
    }

    public func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord {
        try transaction { rows in
            try rows.lockName(bucket, name)
            guard var record = try rows.target(bucket, name, generation: generation) else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, name))")
            }
            try conditions.check(record, describing: describe(bucket, name))
            try change(&record.fields)
            record.metageneration += 1
            record.updated = time
            try rows.updateVersion(record)
            var changes = Changes(bucket: bucket, time: time)
            changes.events.append(StorageEvent(kind: .metadataUpdate, object: record, time: time))
            try changes.write(to: &rows, events: recordsEvents)
            return record
        }
    }

    public func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?) {
        try transaction { rows in
            // Both names locked in byte order, so two moves between the same names cannot deadlock.
            for name in [source, destination].sorted() { try rows.lockName(bucket, name) }
            guard let moving = try rows.liveVersion(bucket, source) else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, source))")
            }
            try sourceConditions.check(moving, describing: describe(bucket, source))
            let current = try rows.liveVersion(bucket, destination)
            try destinationConditions.check(current, describing: describe(bucket, destination))
            let versioning = try rows.bucket(bucket, lock: .share)?.versioning ?? false
            var changes = Changes(bucket: bucket, time: time)
            // The source leaves as a delete would; its blob goes with the new version, so it is not garbage.
            if versioning {
                try rows.markNoncurrent(moving)
                changes.archived(moving)
            } else {
                try rows.deleteVersion(moving, softDeletion: nil)
                changes.deleted(moving, wasLive: true)
            }
            if let current {
                try rows.retire(current, versioning: versioning, softDeletion: nil, at: time, into: &changes)
            }
            let generation = try rows.nextGeneration(for: bucket, destination, at: time)
            let moved = ObjectRecord(
                bucket: bucket, name: destination, generation: generation, metageneration: 1, blob: moving.blob,
                blobID: moving.blobID, fields: moving.fields, timeCreated: time, updated: time,
                componentCount: moving.componentCount)
            try rows.insertLiveVersion(moved)
            changes.finalized(moved)
            try changes.write(to: &rows, events: recordsEvents)
            return (moved, current)
        }
    }

    public func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord {
        let time = currentTime()
        return try transaction { rows in
            try rows.lockName(bucket, name)
            guard let target = try rows.target(bucket, name, generation: generation) else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, name))")
            }
            try conditions.check(target, describing: describe(bucket, name))
            let versioning = try rows.bucket(bucket, lock: .share)?.versioning ?? false
            var changes = Changes(bucket: bucket, time: time)
            if generation == nil && versioning {
                // Deleting the live version of a versioned object keeps it as a noncurrent version (GCS).
                try rows.markNoncurrent(target)
                changes.archived(target)
            } else {
                // A generation named outright may be the live one or a noncurrent one; usage counts them apart.
                let wasLive = try generation == nil || rows.liveVersion(bucket, name)?.generation == target.generation
                try rows.remove(target, softDeletion: softDeletion, at: time)
                changes.deleted(target, wasLive: wasLive)
            }
            try changes.write(to: &rows, events: recordsEvents)
            return target
        }
    }

    public func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp,
        replacedSoftDeletion: SoftDeletion?, editing edit: (inout ObjectFields) throws -> Void
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) {
        try transaction { rows in
            try rows.lockName(bucket, name)
            guard let old = try rows.softDeletedVersion(bucket, name, generation: generation)?.record else {
                throw StorageError(.notFound, "No such soft-deleted object: \(describe(bucket, name))#\(generation)")
            }
            let current = try rows.liveVersion(bucket, name)
            try conditions.check(current, describing: describe(bucket, name))
            let versioning = try rows.bucket(bucket, lock: .share)?.versioning ?? false
            var changes = Changes(bucket: bucket, time: time)
            if let current {
                try rows.retire(
                    current, versioning: versioning, softDeletion: replacedSoftDeletion, at: time,
                    keeping: old.blobID, into: &changes)
            }
            try rows.deleteSoftDeletedVersion(bucket, name, generation: generation)
            let next = try rows.nextGeneration(for: bucket, name, at: time)
            var fields = old.fields
            try edit(&fields)
            let restored = ObjectRecord(
                bucket: bucket, name: name, generation: next, metageneration: 1, blob: old.blob, blobID: old.blobID,
                fields: fields, timeCreated: time, updated: time, componentCount: old.componentCount)
            try rows.insertLiveVersion(restored)
            changes.finalized(restored)
            try changes.write(to: &rows, events: recordsEvents)
            return (restored, current)
        }
    }

    public func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int {
        try transaction { rows in
            try rows.deleteSoftDeletedBuckets(hardDeletedBy: time)
            let blobs = try rows.deleteSoftDeletedVersions(hardDeletedBy: time, limit: limit)
            for id in blobs { try rows.addGarbage(id, at: time) }
            return blobs.count
        }
    }

    // MARK: Upload sessions

    public func insertSession(_ session: UploadSession) throws {
        try transaction { rows in
            do {
                try rows.insertSession(session)
            } catch let error as StorageError where error.code == .alreadyExists {
                throw StorageError(.alreadyExists, "upload session already exists", cause: error)
            }
        }
    }

    public func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession {
        try transaction { rows in
            guard var session = try rows.session(id: id) else {
                throw StorageError(.notFound, "No such upload session")
            }
            try change(&session)
            guard session.id == id else { throw StorageError(.invalidArgument, "an upload session's id cannot change") }
            try rows.updateSession(session)
            return session
        }
    }

    public func deleteSession(id: String) throws {
        try transaction { try $0.deleteSession(id: id) }
    }

    // MARK: Blob bookkeeping

    public func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws {
        try transaction { try $0.addGarbage(id, at: time) }
    }

    public func claimGarbageBlob(_ id: BlobID, registeredBefore cutoff: Timestamp?, at time: Timestamp) throws -> Bool {
        try transaction { rows in
            // Locked: a commit taking the blob now either finished first (the entry is gone) or waits for this
            // transaction, and then finds the entry claimed.
            guard let entry = try rows.garbageEntry(id) else { return false }
            if entry.collecting != nil { return true }
            if let cutoff, entry.registered >= cutoff { return false }
            guard try !rows.blobIsReferenced(id) else { return false }
            try rows.markCollecting(id, at: time)
            return true
        }
    }

    public func forgetBlob(_ id: BlobID) throws {
        try transaction { rows in
            try rows.removeGarbage(id)
            if id.isInline { try rows.deleteInlineBlob(id) }
        }
    }

    /// An inline blob must be named as one and fit the store's limit: the limit is what keeps rows small.
    private func checkInline(_ id: BlobID, _ bytes: [UInt8], for object: String) throws {
        guard id.isInline, bytes.count <= inlineBlobLimit else {
            throw StorageError(
                .internalError,
                "\(bytes.count) bytes for \(object) cannot be kept inline as \(id) (at most \(inlineBlobLimit) are)")
        }
    }

    public func reset() throws {
        let time = currentTime()
        try transaction { try $0.deleteAllButDocuments(garbageAt: time) }
    }

    // MARK: Documents

    public func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws {
        try transaction { rows in
            var text = try rows.document(name)
            try change(&text)
            try rows.storeDocument(name, text)
        }
    }

    // MARK: Storage events and usage

    public func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws
        -> [OutboxEvent]
    {
        guard limit > 0 else { return [] }
        return try transaction { try $0.claimEvents(owner: owner, now: now, leaseUntil: leaseUntil, limit: limit) }
    }

    public func completeEvent(_ sequence: Int64) throws {
        try transaction { try $0.deleteEvent(sequence) }
    }

    public func retryEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws {
        try transaction { try $0.releaseEvent(sequence, owner: owner, retryAt: retryAt) }
    }

    public func outboxStatus() throws -> OutboxStatus {
        try transaction { try $0.outboxStatus() }
    }

    public func bucketUsage() throws -> [BucketName: BucketUsage] {
        try transaction { try $0.bucketUsage() }
    }
}

/// What one object write changes beyond its rows: the events it reports and what it adds to its bucket's usage,
/// written together at the end of the transaction (late, so PostgreSQL's usage row, which every write in the bucket
/// updates, stays locked briefly).
private struct Changes {
    let bucket: BucketName
    let time: Timestamp
    var events: [StorageEvent] = []
    var usage = BucketUsage.zero

    init(bucket: BucketName, time: Timestamp) {
        self.bucket = bucket
        self.time = time
    }

    mutating func finalized(_ record: ObjectRecord) {
        events.append(StorageEvent(kind: .finalize, object: record, time: time))
        usage += .live(record)
    }

    /// A live version kept noncurrent.
    mutating func archived(_ record: ObjectRecord) {
        events.append(StorageEvent(kind: .archive, object: record, time: time))
        usage += .live(record, -1) + .noncurrent(record)
    }

    /// A version gone for good or into soft delete.
    mutating func deleted(_ record: ObjectRecord, wasLive: Bool) {
        events.append(StorageEvent(kind: .delete, object: record, time: time))
        usage += wasLive ? .live(record, -1) : .noncurrent(record, -1)
    }

    func write<Rows: MetadataRows>(to rows: inout Rows, events recordsEvents: Bool) throws {
        if recordsEvents {
            for event in events { try rows.appendEvent(event) }
        }
        if !usage.isZero { try rows.addUsage(bucket, usage) }
    }
}

extension MetadataRows {
    /// The live version (generation nil) or the version `generation`, locked.
    fileprivate mutating func target(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws
        -> ObjectRecord?
    {
        guard let generation else { return try liveVersion(bucket, name) }
        return try version(bucket, name, generation: generation)
    }

    /// Takes the blob of a version about to be committed off the garbage list (an upload's blob, registered before
    /// its bytes were written), or finds it held already (a version that reuses a blob); otherwise a collection has
    /// claimed or deleted it, and this throws `.unavailable` (503): the upload must be sent again.
    fileprivate mutating func holdUploadedBlob(_ id: BlobID, for object: String) throws {
        if try takeGarbage(id) || blobIsReferenced(id) { return }
        throw StorageError(
            .unavailable,
            "The bytes uploaded for \(object) were collected as garbage before the upload committed; send it again.",
            cause: CollectedBlob(id: id))
    }

    /// The session `id`, locked, which must still be active (a finalize in progress).
    fileprivate mutating func activeSession(_ id: String) throws -> UploadSession {
        guard let session = try session(id: id) else { throw StorageError(.notFound, "No such upload session") }
        guard session.state == .active else { throw UploadSession.notActive(id, state: session.state) }
        return session
    }

    /// The live version a write replaces: kept noncurrent in a versioned bucket, else removed (``remove``). `kept`:
    /// the blob the new version holds, which does not become garbage even if the replaced version had it too.
    fileprivate mutating func retire(
        _ current: ObjectRecord, versioning: Bool, softDeletion: SoftDeletion?, at time: Timestamp,
        keeping kept: BlobID? = nil, into changes: inout Changes
    ) throws {
        if versioning {
            try markNoncurrent(current)
            changes.archived(current)
        } else {
            try remove(current, softDeletion: softDeletion, at: time, keeping: kept)
            changes.deleted(current, wasLive: true)
        }
    }

    /// A version leaves its name: among the soft-deleted versions when `softDeletion` is given (its blob stays
    /// referenced), else for good (its blob becomes garbage, unless it is `kept`).
    fileprivate mutating func remove(
        _ record: ObjectRecord, softDeletion: SoftDeletion?, at time: Timestamp, keeping kept: BlobID? = nil
    ) throws {
        if softDeletion == nil && record.blobID != kept { try addGarbage(record.blobID, at: time) }
        try deleteVersion(record, softDeletion: softDeletion)
    }
}

/// A bucket to change or delete that is not there (``StorageError/noSuchBucket(_:)`` is for writes into one).
private func noBucket(_ name: BucketName) -> StorageError {
    StorageError(.notFound, "No such bucket: \(name.rawValue)")
}

private func describe(_ bucket: BucketName, _ name: ObjectName) -> String {
    "\(bucket.rawValue)/\(name.rawValue)"
}

/// Why a commit found its blob gone: the blob a collection claimed or deleted first.
public struct CollectedBlob: Error, Sendable, Equatable {
    public let id: BlobID
}
