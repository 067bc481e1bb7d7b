public import SiloCore
internal import SiloWire

/// A ``MetadataStore`` in one SQLite file (`<data>/metadata.sqlite`), in WAL mode.
///
/// One writer connection behind a lock runs every write as one `BEGIN IMMEDIATE` transaction, so preconditions
/// and generation assignment see a stable state; a pool of reader connections serves lookups and listings beside it.
///
/// The writer's lock is a ``BlockingMutex``: it is held across a whole transaction, WAL fsync included, so a writer
/// waiting for it should sleep, not spin (`Synchronization.Mutex` spins first, and waiters spinning through another
/// thread's fsync burn the cores that thread needs; docs/architecture-notes.md has the measurement).
public final class SQLiteMetadataStore: MetadataStore {
    public struct Configuration: Sendable {
        /// SQLite's durability level. FULL fsyncs the WAL at every commit, so an acknowledged write survives power
        /// loss, not only a crash of the process.
        public enum Synchronous: String, Sendable {
            case off = "OFF"
            case normal = "NORMAL"
            case full = "FULL"
            case extra = "EXTRA"
        }

        public var synchronous: Synchronous = .full
        /// How long a connection waits for a lock held by another process before failing with `.unavailable`.
        public var busyTimeoutMilliseconds: Int32 = 5_000
        /// Reader connections kept open between reads.
        public var maxIdleReaders: Int = 4
        /// Called with the SQL text of every statement run (bound values are not included). For tests and debugging.
        public var trace: (@Sendable (String) -> Void)? = nil
        /// The clock for times the protocol does not pass in (bucket creation, delete, reset).
        public var now: @Sendable () -> Timestamp = { Timestamp.now() }
        /// Holds an exclusive lock on `<path>.lock` while open: a second process (or store) opening the same file
        /// fails with `.unavailable`. `silo serve` sets it, which is what lets it cache reads in front of the store.
        public var lockAgainstOtherProcesses = false

        public init() {}
    }

    private struct Writer {
        let connection: Connection
        /// The highest generation assigned so far; the next is `max(now, lastGeneration + 1)`.
        var lastGeneration: Int64
    }

    public let path: String
    private let configuration: Configuration
    private let writer: BlockingMutex<Writer>
    private let readers: ReaderPool
    /// Released (closed) with the store.
    private let processLock: ProcessLock?
    /// The schema version found at open, before migrating (0 for a new file).
    @_spi(Testing) public let schemaVersionAtOpen: Int

    public init(path: String, configuration: Configuration = Configuration()) throws {
        self.path = path
        self.configuration = configuration
        processLock = configuration.lockAgainstOtherProcesses ? try ProcessLock(path: path + ".lock") : nil
        let connection = try Connection(
            path: path, readOnly: false, busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds,
            trace: configuration.trace)
        let journalMode = try connection.row("PRAGMA journal_mode = WAL") { $0.text(0) }
        guard journalMode?.lowercased() == "wal" else {
            throw StorageError(
                .unavailable, "\(path) cannot use WAL mode (journal_mode is \(journalMode ?? "unknown"))")
        }
        try connection.execute("PRAGMA synchronous = \(configuration.synchronous.rawValue); PRAGMA foreign_keys = ON")
        schemaVersionAtOpen = try Migrations.migrate(connection)
        let lastGeneration =
            try connection.row(
                "SELECT max((SELECT value FROM counters WHERE name = 'last_generation'), "
                    + "coalesce((SELECT max(generation) FROM objects), 0))"
            ) { $0.int64(0) } ?? 0
        writer = BlockingMutex(Writer(connection: connection, lastGeneration: lastGeneration))
        let busyTimeout = configuration.busyTimeoutMilliseconds
        let trace = configuration.trace
        readers = ReaderPool(maxIdle: configuration.maxIdleReaders) {
            let reader = try Connection(path: path, readOnly: false, busyTimeoutMilliseconds: busyTimeout, trace: trace)
            // Readers only read; query_only makes an accidental write fail instead of racing the writer.
            try reader.execute("PRAGMA query_only = ON")
            return reader
        }
    }

    /// Closes every connection. Later calls throw `.unavailable`. Also done when the store is released.
    public func close() {
        readers.close()
        writer.withLock { $0.connection.close() }
        processLock?.release()
    }

    deinit { close() }

    // MARK: Access

    private func read<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        try readers.read(body)
    }

    /// Runs `body` in one write transaction on the writer connection.
    private func write<Result>(_ body: (Connection, inout Int64) throws -> Result) throws -> Result {
        try writer.withLock { writer in
            var lastGeneration = writer.lastGeneration
            let result = try writer.connection.transaction { try body(writer.connection, &lastGeneration) }
            // Only a committed transaction moves the counter on.
            writer.lastGeneration = lastGeneration
            return result
        }
    }

    // MARK: Buckets

    public func bucket(_ name: BucketName) throws -> BucketRecord? {
        try read {
            try $0.row(
                "SELECT \(Codec.bucketColumns) FROM buckets WHERE name = ?", [.text(name.rawValue)], Codec.bucket)
        }
    }

    public func ensureBucket(_ name: BucketName) throws -> BucketRecord {
        if let existing = try bucket(name) { return existing }
        let time = configuration.now()
        return try write { connection, _ in try ensureBucket(name, at: time, connection) }
    }

    private func ensureBucket(_ name: BucketName, at time: Timestamp, _ connection: Connection) throws -> BucketRecord {
        try connection.run(
            """
            INSERT OR IGNORE INTO buckets (name, time_created, updated, metageneration, versioning, generation)
            VALUES (?, ?, ?, 1, 0, ?)
            """,
            [
                .text(name.rawValue), .integer(time.microseconds), .integer(time.microseconds),
                .integer(time.microseconds),
            ])
        guard
            let record = try connection.row(
                "SELECT \(Codec.bucketColumns) FROM buckets WHERE name = ?", [.text(name.rawValue)], Codec.bucket)
        else { throw StorageError(.internalError, "bucket \(name) vanished inside its transaction") }
        return record
    }

    public func buckets() throws -> [BucketRecord] {
        try read { try $0.rows("SELECT \(Codec.bucketColumns) FROM buckets ORDER BY name", [], Codec.bucket) }
    }

    public func createBucket(_ template: BucketRecord) throws -> BucketRecord {
        try write { connection, _ in
            guard try storedBucket(template.name, connection) == nil else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(template.name.rawValue)")
            }
            let record = BucketRecord(
                name: template.name, timeCreated: template.timeCreated, updated: template.timeCreated,
                versioning: template.versioning, resource: template.resource)
            try connection.run(
                "INSERT INTO buckets (\(Codec.bucketColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)", Codec.bucketValues(record))
            return record
        }
    }

    public func updateBucket(
        _ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void
    ) throws -> BucketRecord {
        try write { connection, _ in
            guard let stored = try storedBucket(name, connection) else {
                throw StorageError(.notFound, "No such bucket: \(name.rawValue)")
            }
            var record = stored
            try change(&record)
            guard record.name == name else { throw StorageError(.invalidArgument, "a bucket's name cannot change") }
            // The store owns these, whatever `change` did to them.
            record.timeCreated = stored.timeCreated
            record.metageneration = stored.metageneration + 1
            record.updated = time
            record.generation = stored.generation
            try connection.run(
                "UPDATE buckets SET updated = ?, metageneration = ?, versioning = ?, resource = ? WHERE name = ?",
                [
                    .integer(record.updated.microseconds), .integer(record.metageneration),
                    .integer(record.versioning ? 1 : 0), .text(record.resource), .text(name.rawValue),
                ])
            return record
        }
    }

    public func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?)
        throws
    {
        try write { connection, _ in
            guard let bucket = try storedBucket(name, connection) else {
                throw StorageError(.notFound, "No such bucket: \(name.rawValue)")
            }
            try check(bucket)
            // A prefix of the primary key (bucket, name, generation): one index probe, live or noncurrent alike.
            let hasVersions =
                try connection.row("SELECT 1 FROM objects WHERE bucket = ? LIMIT 1", [.text(name.rawValue)]) { _ in
                    true
                } ?? false
            guard !hasVersions else {
                throw StorageError(.conflict, "The bucket you tried to delete is not empty: \(name.rawValue)")
            }
            try connection.run(
                """
                INSERT OR IGNORE INTO blob_garbage (blob_id, registered)
                SELECT blob_id, ? FROM soft_deleted_objects WHERE bucket = ?
                """, [.integer(configuration.now().microseconds), .text(name.rawValue)])
            try connection.run("DELETE FROM soft_deleted_objects WHERE bucket = ?", [.text(name.rawValue)])
            if let softDeletion {
                try connection.run(
                    """
                    INSERT OR REPLACE INTO soft_deleted_buckets (\(Codec.bucketColumns), soft_deleted, hard_delete)
                    SELECT \(Codec.bucketColumns), ?, ? FROM buckets WHERE name = ?
                    """,
                    [
                        .integer(softDeletion.at.microseconds), .integer(softDeletion.hardDeleteAt.microseconds),
                        .text(name.rawValue),
                    ])
            }
            try connection.run("DELETE FROM buckets WHERE name = ?", [.text(name.rawValue)])
        }
    }

    private func storedBucket(_ name: BucketName, _ connection: Connection) throws -> BucketRecord? {
        try connection.row(
            "SELECT \(Codec.bucketColumns) FROM buckets WHERE name = ?", [.text(name.rawValue)], Codec.bucket)
    }

    // MARK: Objects

    private static let selectLive =
        "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = ? AND name = ? AND live = 1"
    private static let selectGeneration =
        "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = ? AND name = ? AND generation = ?"

    private func live(_ bucket: BucketName, _ name: ObjectName, _ connection: Connection) throws -> ObjectRecord? {
        try connection.row(Self.selectLive, [.text(bucket.rawValue), .blob(Array(name.rawValue.utf8))], Codec.object)
    }

    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        try read { connection in
            guard let generation else { return try live(bucket, name, connection) }
            return try connection.row(
                Self.selectGeneration,
                [.text(bucket.rawValue), .blob(Array(name.rawValue.utf8)), .integer(generation)],
                Codec.object)
        }
    }

    public func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) {
        let result = try write { connection, lastGeneration in
            let current = try live(draft.bucket, draft.name, connection)
            try conditions.check(current, describing: describe(draft.bucket, draft.name))
            let session = try sessionID.map { try activeSession($0, connection) }
            // Objects imply their bucket, as in the Firebase emulator.
            if !draft.createsBucket, try storedBucket(draft.bucket, connection) == nil {
                throw StorageError.noSuchBucket(draft.bucket)
            }
            let bucket = try ensureBucket(draft.bucket, at: time, connection)
            if let current {
                try retire(
                    current, versioning: bucket.versioning, softDeletion: draft.replacedSoftDeletion, at: time,
                    connection)
            }
            let generation = max(time.microseconds, lastGeneration + 1)
            let stored = ObjectRecord(
                bucket: draft.bucket, name: draft.name, generation: generation, metageneration: 1, blob: draft.blob,
                blobID: draft.blobID, fields: draft.fields, timeCreated: time, updated: time,
                componentCount: draft.componentCount)
            try connection.run(
                "INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))",
                Codec.objectValues(stored, live: true))
            try connection.run("DELETE FROM blob_garbage WHERE blob_id = ?", [.text(draft.blobID.rawValue)])
            try connection.run("UPDATE counters SET value = ? WHERE name = 'last_generation'", [.integer(generation)])
            if let session { try storeSession(session.finalized(generation: generation, at: time), connection) }
            lastGeneration = generation
            return Inserted(stored: stored, replaced: current)
        }
        return (result.stored, result.replaced)
    }

    /// What a write transaction that makes a version live returns: that version and the one it replaced.
    private struct Inserted {
        var stored: ObjectRecord
        var replaced: ObjectRecord?
    }

    public func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord {
        try write { connection, _ in
            let found =
                try generation.map {
                    try connection.row(
                        Self.selectGeneration,
                        [.text(bucket.rawValue), .blob(Array(name.rawValue.utf8)), .integer($0)],
                        Codec.object)
                } ?? live(bucket, name, connection)
            guard var record = found else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, name))")
            }
            try conditions.check(record, describing: describe(bucket, name))
            try change(&record.fields)
            record.metageneration += 1
            record.updated = time
            let fields = record.fields
            try connection.run(
                """
                UPDATE objects SET metageneration = ?, updated = ?, content_type = ?, content_encoding = ?,
                    content_disposition = ?, content_language = ?, cache_control = ?, custom_time = ?,
                    custom_metadata = ?, download_tokens = ?, extra = ?
                WHERE bucket = ? AND name = ? AND generation = ?
                """,
                [
                    .integer(record.metageneration), .integer(time.microseconds), fields.contentType.sqlValue,
                    fields.contentEncoding.sqlValue, fields.contentDisposition.sqlValue,
                    fields.contentLanguage.sqlValue, fields.cacheControl.sqlValue,
                    fields.customTime.map { .integer($0.microseconds) } ?? .null,
                    .text(StoredFieldJSON.encode(fields.customMetadata)),
                    .text(StoredFieldJSON.encode(fields.downloadTokens)), .text(Codec.extrasJSON(fields.extras)),
                    .text(bucket.rawValue), .blob(Array(name.rawValue.utf8)), .integer(record.generation),
                ])
            return record
        }
    }

    public func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?) {
        let result = try write { connection, lastGeneration in
            guard let moving = try live(bucket, source, connection) else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, source))")
            }
            try sourceConditions.check(moving, describing: describe(bucket, source))
            let current = try live(bucket, destination, connection)
            try destinationConditions.check(current, describing: describe(bucket, destination))
            let versioning = try storedBucket(bucket, connection)?.versioning ?? false
            // The source leaves as a delete would; its blob goes with the new version, so it is not garbage.
            let sourceKey: [SQLValue] = [
                .text(bucket.rawValue), .blob(Array(source.rawValue.utf8)), .integer(moving.generation),
            ]
            try connection.run(
                versioning
                    ? "UPDATE objects SET live = 0 WHERE bucket = ? AND name = ? AND generation = ?"
                    : "DELETE FROM objects WHERE bucket = ? AND name = ? AND generation = ?", sourceKey)
            if let current { try retire(current, versioning: versioning, softDeletion: nil, at: time, connection) }
            let generation = max(time.microseconds, lastGeneration + 1)
            let moved = ObjectRecord(
                bucket: bucket, name: destination, generation: generation, metageneration: 1, blob: moving.blob,
                blobID: moving.blobID, fields: moving.fields, timeCreated: time, updated: time,
                componentCount: moving.componentCount)
            try connection.run(
                "INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))",
                Codec.objectValues(moved, live: true))
            try connection.run("UPDATE counters SET value = ? WHERE name = 'last_generation'", [.integer(generation)])
            lastGeneration = generation
            return Inserted(stored: moved, replaced: current)
        }
        return (result.stored, result.replaced)
    }

    public func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord {
        let time = configuration.now()
        return try write { connection, _ in
            let nameBytes = SQLValue.blob(Array(name.rawValue.utf8))
            let target =
                if let generation {
                    try connection.row(
                        Self.selectGeneration, [.text(bucket.rawValue), nameBytes, .integer(generation)], Codec.object)
                } else {
                    try live(bucket, name, connection)
                }
            guard let target else { throw StorageError(.notFound, "No such object: \(describe(bucket, name))") }
            try conditions.check(target, describing: describe(bucket, name))
            let key: [SQLValue] = [.text(bucket.rawValue), nameBytes, .integer(target.generation)]
            let versioning =
                try connection.row("SELECT versioning FROM buckets WHERE name = ?", [.text(bucket.rawValue)]) {
                    $0.int64(0) != 0
                } ?? false
            if generation == nil && versioning {
                // Deleting the live version of a versioned object keeps it as a noncurrent version (GCS).
                try connection.run("UPDATE objects SET live = 0 WHERE bucket = ? AND name = ? AND generation = ?", key)
            } else {
                try removeVersion(key, target, softDeletion: softDeletion, at: time, connection)
            }
            return target
        }
    }

    // MARK: Soft delete

    /// The live version a write replaces: kept noncurrent in a versioned bucket, else removed (``removeVersion``).
    private func retire(
        _ current: ObjectRecord, versioning: Bool, softDeletion: SoftDeletion?, at time: Timestamp,
        _ connection: Connection
    ) throws {
        let key: [SQLValue] = [
            .text(current.bucket.rawValue), .blob(Array(current.name.rawValue.utf8)), .integer(current.generation),
        ]
        if versioning {
            try connection.run("UPDATE objects SET live = 0 WHERE bucket = ? AND name = ? AND generation = ?", key)
        } else {
            try removeVersion(key, current, softDeletion: softDeletion, at: time, connection)
        }
    }

    /// Removes the version row at `key`: into the soft-deleted versions when `softDeletion` is given (its blob stays
    /// referenced), else for good (its blob becomes garbage).
    private func removeVersion(
        _ key: [SQLValue], _ record: ObjectRecord, softDeletion: SoftDeletion?, at time: Timestamp,
        _ connection: Connection
    ) throws {
        if let softDeletion {
            try connection.run(
                """
                INSERT OR REPLACE INTO soft_deleted_objects (\(Codec.objectColumns), soft_deleted, hard_delete)
                SELECT \(Codec.objectColumns), ?, ? FROM objects WHERE bucket = ? AND name = ? AND generation = ?
                """,
                [.integer(softDeletion.at.microseconds), .integer(softDeletion.hardDeleteAt.microseconds)] + key)
        } else {
            try addGarbage(record.blobID, at: time, connection)
        }
        try connection.run("DELETE FROM objects WHERE bucket = ? AND name = ? AND generation = ?", key)
    }

    private static let softColumns = "\(Codec.objectColumns), soft_deleted, hard_delete"

    private static func softDeleted(_ row: Statement) throws -> SoftDeletedObject {
        SoftDeletedObject(
            record: try Codec.object(row),
            deletion: SoftDeletion(
                at: Timestamp(microseconds: row.int64(20)), hardDeleteAt: Timestamp(microseconds: row.int64(21))))
    }

    public func softDeletedObjects(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [SoftDeletedObject]
    {
        try versionRows(
            "soft_deleted_objects", columns: Self.softColumns, bucket, prefix: prefix, startAfter: startAfter,
            limit: limit, Self.softDeleted)
    }

    public func softDeletedObject(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    {
        try read { connection in
            try connection.row(
                "SELECT \(Self.softColumns) FROM soft_deleted_objects WHERE bucket = ? AND name = ? AND generation = ?",
                [.text(bucket.rawValue), .blob(Array(name.rawValue.utf8)), .integer(generation)], Self.softDeleted)
        }
    }

    public func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) {
        let result = try write { connection, lastGeneration in
            let nameBytes = SQLValue.blob(Array(name.rawValue.utf8))
            let softKey: [SQLValue] = [.text(bucket.rawValue), nameBytes, .integer(generation)]
            guard
                let old = try connection.row(
                    "SELECT \(Self.softColumns) FROM soft_deleted_objects WHERE bucket = ? AND name = ? AND generation = ?",
                    softKey, Self.softDeleted)
            else {
                throw StorageError(.notFound, "No such soft-deleted object: \(describe(bucket, name))#\(generation)")
            }
            let current = try live(bucket, name, connection)
            try conditions.check(current, describing: describe(bucket, name))
            if let current {
                try retire(
                    current, versioning: try storedBucket(bucket, connection)?.versioning ?? false, softDeletion: nil,
                    at: time, connection)
            }
            try connection.run(
                "DELETE FROM soft_deleted_objects WHERE bucket = ? AND name = ? AND generation = ?", softKey)
            let newGeneration = max(time.microseconds, lastGeneration + 1)
            let record = old.record
            let restored = ObjectRecord(
                bucket: bucket, name: name, generation: newGeneration, metageneration: 1, blob: record.blob,
                blobID: record.blobID, fields: record.fields, timeCreated: time, updated: time,
                componentCount: record.componentCount)
            try connection.run(
                "INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))",
                Codec.objectValues(restored, live: true))
            try connection.run(
                "UPDATE counters SET value = ? WHERE name = 'last_generation'", [.integer(newGeneration)])
            lastGeneration = newGeneration
            return Inserted(stored: restored, replaced: current)
        }
        return (result.stored, result.replaced)
    }

    public func softDeletedBuckets() throws -> [SoftDeletedBucket] {
        try read { connection in
            try connection.rows(
                "SELECT \(Codec.bucketColumns), soft_deleted, hard_delete FROM soft_deleted_buckets ORDER BY name, generation"
            ) { row in
                SoftDeletedBucket(
                    record: try Codec.bucket(row),
                    deletion: SoftDeletion(
                        at: Timestamp(microseconds: row.int64(7)), hardDeleteAt: Timestamp(microseconds: row.int64(8))))
            }
        }
    }

    public func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord {
        try write { connection, _ in
            let key: [SQLValue] = [.text(name.rawValue), .integer(generation)]
            guard
                let record = try connection.row(
                    "SELECT \(Codec.bucketColumns) FROM soft_deleted_buckets WHERE name = ? AND generation = ?", key,
                    Codec.bucket)
            else { throw StorageError(.notFound, "No such soft-deleted bucket: \(name.rawValue)#\(generation)") }
            guard try storedBucket(name, connection) == nil else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(name.rawValue)")
            }
            try connection.run(
                "INSERT INTO buckets (\(Codec.bucketColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)", Codec.bucketValues(record))
            try connection.run("DELETE FROM soft_deleted_buckets WHERE name = ? AND generation = ?", key)
            return record
        }
    }

    public func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int {
        try write { connection, _ in
            try connection.run("DELETE FROM soft_deleted_buckets WHERE hard_delete <= ?", [.integer(time.microseconds)])
            let due = try connection.rows(
                "SELECT bucket, name, generation, blob_id FROM soft_deleted_objects WHERE hard_delete <= ? LIMIT ?",
                [.integer(time.microseconds), .integer(Int64(limit))]
            ) { row in
                ([SQLValue.text(row.text(0)), .blob(row.blob(1)), .integer(row.int64(2))], row.text(3))
            }
            for (key, blob) in due {
                try connection.run(
                    "DELETE FROM soft_deleted_objects WHERE bucket = ? AND name = ? AND generation = ?", key)
                if let id = BlobID(rawValue: blob) { try addGarbage(id, at: time, connection) }
            }
            return due.count
        }
    }

    public func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws
        -> [ObjectRecord]
    {
        guard limit > 0 else { return [] }
        let lower = Array(prefix.utf8)
        let upper = ObjectName.keyAfterAllNames(startingWith: lower)
        return try read { connection in
            try connection.rows(
                """
                SELECT \(Codec.objectColumns) FROM objects
                WHERE bucket = ? AND live = 1 AND name >= ? AND name < ? AND name > ?
                ORDER BY name LIMIT ?
                """,
                [.text(bucket.rawValue), .blob(lower), .blob(upper), .blob(startAfter ?? []), .integer(Int64(limit))],
                Codec.object)
        }
    }

    public func listObjectVersions(_ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?, limit: Int)
        throws -> [ObjectRecord]
    {
        try versionRows(
            "objects", columns: Codec.objectColumns, bucket, prefix: prefix, startAfter: startAfter, limit: limit,
            Codec.object)
    }

    /// Rows of `table` (objects, or soft-deleted ones) by (name bytes, generation) after `startAfter`.
    private func versionRows<Row: Sendable>(
        _ table: String, columns: String, _ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?,
        limit: Int, _ decode: (Statement) throws -> Row
    ) throws -> [Row] {
        guard limit > 0 else { return [] }
        let prefixBytes = Array(prefix.utf8)
        // No valid UTF-8 contains 0xFF, so every name starting with the prefix sorts below prefix + 0xFF.
        let upper = ObjectName.keyAfterAllNames(startingWith: prefixBytes)
        // Names are never empty, so (empty, Int64.min) is before every version.
        let after = startAfter ?? ObjectVersionKey(name: [], generation: .min)
        // The range starts at the larger of the prefix and the key's name, so a page deep into a big prefix seeks
        // straight to its key in the primary key instead of walking every version before it; the OR then only
        // drops the key's own name's earlier generations.
        let lower = prefixBytes.lexicographicallyPrecedes(after.name) ? after.name : prefixBytes
        return try read { connection in
            try connection.rows(
                """
                SELECT \(columns) FROM \(table)
                WHERE bucket = ? AND name >= ? AND name < ? AND (name > ? OR (name = ? AND generation > ?))
                ORDER BY name, generation LIMIT ?
                """,
                [
                    .text(bucket.rawValue), .blob(lower), .blob(upper), .blob(after.name), .blob(after.name),
                    .integer(after.generation), .integer(Int64(limit)),
                ],
                decode)
        }
    }

    // MARK: Upload sessions

    public func insertSession(_ session: UploadSession) throws {
        let record = try Codec.sessionJSON(session)
        try write { connection, _ in
            do {
                try connection.run(
                    "INSERT INTO sessions (id, blob_id, state, updated, record, caller, received) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        .text(session.id), .text(session.blobID.rawValue), .text(session.state.rawValue),
                        .integer(session.updated.microseconds), .text(record), session.caller.sqlValue,
                        .integer(session.received),
                    ])
            } catch let error as StorageError where error.code == .alreadyExists {
                throw StorageError(.alreadyExists, "upload session already exists", cause: error)
            }
        }
    }

    public func session(id: String) throws -> UploadSession? {
        try read {
            try $0.row("SELECT record FROM sessions WHERE id = ?", [.text(id)]) { try Codec.session($0.text(0)) }
        }
    }

    public func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession {
        try write { connection, _ in
            guard var session = try storedSession(id, connection) else {
                throw StorageError(.notFound, "No such upload session")
            }
            try change(&session)
            guard session.id == id else { throw StorageError(.invalidArgument, "an upload session's id cannot change") }
            try storeSession(session, connection)
            return session
        }
    }

    private func storedSession(_ id: String, _ connection: Connection) throws -> UploadSession? {
        try connection.row("SELECT record FROM sessions WHERE id = ?", [.text(id)]) { try Codec.session($0.text(0)) }
    }

    /// The session `id`, which must still be active (a finalize in progress).
    private func activeSession(_ id: String, _ connection: Connection) throws -> UploadSession {
        guard let session = try storedSession(id, connection) else {
            throw StorageError(.notFound, "No such upload session")
        }
        guard session.state == .active else { throw UploadSession.notActive(id, state: session.state) }
        return session
    }

    private func storeSession(_ session: UploadSession, _ connection: Connection) throws {
        try connection.run(
            "UPDATE sessions SET blob_id = ?, state = ?, updated = ?, record = ?, caller = ?, received = ? WHERE id = ?",
            [
                .text(session.blobID.rawValue), .text(session.state.rawValue),
                .integer(session.updated.microseconds), .text(try Codec.sessionJSON(session)),
                session.caller.sqlValue, .integer(session.received), .text(session.id),
            ])
    }

    public func sessions(updatedBefore time: Timestamp) throws -> [UploadSession] {
        try read { connection in
            try connection.rows(
                "SELECT record FROM sessions WHERE updated < ? ORDER BY updated, id", [.integer(time.microseconds)]
            ) { try Codec.session($0.text(0)) }
        }
    }

    public func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession] {
        guard limit > 0 else { return [] }
        let end = try UploadSession.idRangeEnd(prefix)
        return try read { connection in
            try connection.rows(
                "SELECT record FROM sessions WHERE id >= ? AND id < ? AND id > ? ORDER BY id LIMIT ?",
                [.text(prefix), .text(end), .text(startAfter ?? ""), .integer(Int64(limit))]
            ) { try Codec.session($0.text(0)) }
        }
    }

    public func deleteSession(id: String) throws {
        try write { connection, _ in try connection.run("DELETE FROM sessions WHERE id = ?", [.text(id)]) }
    }

    public func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        try read { connection in
            try connection.row(
                """
                SELECT count(*), coalesce(sum(received), 0) FROM sessions
                WHERE caller = ? AND state = 'active' AND updated >= ?
                """, [.text(caller), .integer(time.microseconds)]
            ) { SessionUsage(sessions: Int($0.int64(0)), bytes: $0.int64(1)) } ?? SessionUsage(sessions: 0, bytes: 0)
        }
    }

    // MARK: Documents

    public func document(_ name: String) throws -> String? {
        try read { try $0.row("SELECT body FROM documents WHERE name = ?", [.text(name)]) { $0.text(0) } }
    }

    public func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws {
        try write { connection, _ in
            var text = try connection.row("SELECT body FROM documents WHERE name = ?", [.text(name)]) { $0.text(0) }
            try change(&text)
            if let text {
                try connection.run(
                    "INSERT INTO documents (name, body) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body",
                    [.text(name), .text(text)])
            } else {
                try connection.run("DELETE FROM documents WHERE name = ?", [.text(name)])
            }
        }
    }

    // MARK: Blob bookkeeping

    private func addGarbage(_ id: BlobID, at time: Timestamp, _ connection: Connection) throws {
        try connection.run(
            "INSERT OR IGNORE INTO blob_garbage (blob_id, registered) VALUES (?, ?)",
            [.text(id.rawValue), .integer(time.microseconds)])
    }

    public func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws {
        try write { connection, _ in try addGarbage(id, at: time, connection) }
    }

    public func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        guard limit > 0 else { return [] }
        return try read { connection in
            try connection.rows(
                """
                SELECT g.blob_id FROM blob_garbage g
                WHERE g.registered < ?
                    AND NOT EXISTS (SELECT 1 FROM objects o WHERE o.blob_id = g.blob_id)
                    AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.blob_id = g.blob_id AND s.state = 'active')
                ORDER BY g.registered, g.blob_id LIMIT ?
                """,
                [.integer(time.microseconds), .integer(Int64(limit))]
            ) { row in
                guard let id = BlobID(rawValue: row.text(0)) else { throw StorageErrorFactory.corruptRow("blob id") }
                return id
            }
        }
    }

    public func forgetBlob(_ id: BlobID) throws {
        try write { connection, _ in
            try connection.run("DELETE FROM blob_garbage WHERE blob_id = ?", [.text(id.rawValue)])
        }
    }

    public func isBlobReferenced(_ id: BlobID) throws -> Bool {
        try read { connection in
            try connection.row(
                """
                SELECT EXISTS (SELECT 1 FROM objects WHERE blob_id = ?1)
                    OR EXISTS (SELECT 1 FROM sessions WHERE blob_id = ?1 AND state = 'active')
                    OR EXISTS (SELECT 1 FROM soft_deleted_objects WHERE blob_id = ?1)
                """, [.text(id.rawValue)]
            ) { $0.int64(0) != 0 } ?? false
        }
    }

    public func reset() throws {
        let time = SQLValue.integer(configuration.now().microseconds)
        try write { connection, _ in
            try connection.run(
                "INSERT OR IGNORE INTO blob_garbage (blob_id, registered) SELECT blob_id, ? FROM objects", [time])
            try connection.run(
                "INSERT OR IGNORE INTO blob_garbage (blob_id, registered) SELECT blob_id, ? FROM sessions", [time])
            try connection.run(
                "INSERT OR IGNORE INTO blob_garbage (blob_id, registered) SELECT blob_id, ? FROM soft_deleted_objects",
                [time])
            try connection.run("DELETE FROM soft_deleted_objects")
            try connection.run("DELETE FROM soft_deleted_buckets")
            try connection.run("DELETE FROM objects")
            try connection.run("DELETE FROM sessions")
            try connection.run("DELETE FROM buckets")
        }
    }

    // MARK: Test hooks

    /// Runs a query on a reader connection and returns every row, each column as text.
    @_spi(Testing) public func textRows(_ sql: String) throws -> [[String?]] {
        try read { connection in
            try connection.rows(sql) { row in (0..<row.columnCount).map { row.optionalText($0) } }
        }
    }

    /// The first column of the first row of `textRows(sql)`.
    @_spi(Testing) public func scalar(_ sql: String) throws -> String? {
        try textRows(sql).first?.first ?? nil
    }

    /// Runs SQL on the writer connection outside the store's API (to simulate other versions or damage).
    @_spi(Testing) public func executeOnWriter(_ sql: String) throws {
        try writer.withLock { try $0.connection.execute(sql) }
    }

    /// Statements left running on the writer connection; must be 0 between calls.
    @_spi(Testing) public func busyStatementCount() -> Int {
        writer.withLock { $0.connection.busyStatementCount() }
    }
}

private func describe(_ bucket: BucketName, _ name: ObjectName) -> String {
    "\(bucket.rawValue)/\(name.rawValue)"
}
