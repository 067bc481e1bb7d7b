internal import CLibPQ
public import SiloCore
internal import SiloWire

/// A ``MetadataStore`` in a PostgreSQL database, shared by any number of Silo nodes.
///
/// Every write is one READ COMMITTED transaction. Writes to an object first take a transaction-scoped advisory
/// lock on its (bucket, name), so concurrent writers of one name, on any node, run one after the other and each
/// checks its preconditions against what the previous one committed, including when no version exists yet (which
/// `SELECT … FOR UPDATE` alone cannot lock). Generations come from one counter row that each insert moves to
/// `max(now, last + 1)` inside its transaction, so they never repeat and always grow across nodes.
/// Deadlocks and serialization failures are retried; so is a connection that broke before COMMIT was sent.
public final class PostgresMetadataStore: MetadataStore {
    public struct Configuration: Sendable {
        /// How long a caller waits for a free connection when all are in use before failing with `.unavailable`.
        public var checkoutTimeout: Duration = .seconds(30)
        /// How many times a transaction runs before a deadlock, serialization failure or broken connection is
        /// reported as `.unavailable`.
        public var maxAttempts: Int = 5
        /// Called with the SQL text of every statement run (bound values are not included). For tests and debugging.
        public var trace: (@Sendable (String) -> Void)? = nil
        /// The clock for times the protocol does not pass in (bucket creation, delete, reset).
        public var now: @Sendable () -> Timestamp = { Timestamp.now() }
        /// A schema of its own for Silo's tables (created if missing), so several deployments, or test runs, can
        /// share one database. Letters, digits and `_` only. Nil uses the connection's `search_path` as it is.
        public var schema: String? = nil

        public init() {}
    }

    public static let defaultPoolSize = 8

    private let configuration: Configuration
    private let pool: ConnectionPool
    /// Mixed into name-lock keys, so deployments in different schemas of one database do not wait for each other.
    private let nameLockNamespace: String
    /// The schema version found at open, before migrating (0 for a new database).
    @_spi(Testing) public let schemaVersionAtOpen: Int64

    /// Connects to `url` (`postgres://user:password@host:port/database?sslmode=…`, or any libpq connection
    /// string) and migrates the schema. `pool_size=N` in the URL's query overrides `poolSize`.
    public init(url: String, poolSize: Int = defaultPoolSize, configuration: Configuration = Configuration()) throws {
        let parsed = try PostgresURL(url)
        self.configuration = configuration
        let conninfo = parsed.conninfo
        let trace = configuration.trace
        let capacity = parsed.poolSize ?? poolSize
        guard capacity > 0 else { throw StorageError(.invalidArgument, "the pool size must be at least 1") }
        let schema = try configuration.schema.map(SchemaName.init)
        nameLockNamespace = schema?.name ?? ""
        pool = ConnectionPool(capacity: capacity, checkoutTimeout: configuration.checkoutTimeout) {
            let connection = try Connection(conninfo: conninfo, trace: trace)
            if let schema {
                try connection.query("SELECT set_config('search_path', $1, false)", [.text(schema.quoted)])
            }
            return connection
        }
        schemaVersionAtOpen = try Self.withRetries(pool: pool, maxAttempts: configuration.maxAttempts) { connection in
            try Migrations.migrate(connection, creatingSchema: schema)
        }
    }

    /// Whether `url` names a PostgreSQL database (`postgres://…` or `postgresql://…`): how `silo serve --metadata`
    /// tells this store's URLs from the others' before calling `init(url:poolSize:configuration:)`.
    public static func handles(_ url: String) -> Bool {
        url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")
    }

    /// Closes every idle connection and refuses new calls with `.unavailable`; connections in use close when their
    /// call ends. Also done when the store is released.
    public func close() { pool.close() }

    deinit { close() }

    // MARK: Access

    /// Runs `body` on a pooled connection outside a transaction (each statement commits on its own).
    private func read<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        try Self.withRetries(pool: pool, maxAttempts: configuration.maxAttempts, body)
    }

    /// Runs `body` in one transaction, again from the start if it fails in a way a rerun can fix.
    private func write<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        try Self.withRetries(pool: pool, maxAttempts: configuration.maxAttempts) { connection in
            try connection.transaction { try body(connection) }
        }
    }

    private static func withRetries<Result>(
        pool: ConnectionPool, maxAttempts: Int, _ body: (Connection) throws -> Result
    ) throws -> Result {
        var attempt = 1
        while true {
            do {
                return try pool.withConnection(body)
            } catch let error as StorageError {
                guard attempt < maxAttempts, let cause = error.cause as? PostgresError else { throw error }
                if cause.isConnectionFailure {
                    pool.discardIdle()
                } else if !cause.isRetryable {
                    throw error
                }
                attempt += 1
            }
        }
    }

    // MARK: Buckets

    private static let selectBucket = "SELECT \(Codec.bucketColumns) FROM buckets WHERE name = $1"

    public func bucket(_ name: BucketName) throws -> BucketRecord? {
        try read { try $0.query(Self.selectBucket, [.text(name.rawValue)]).first(Codec.bucket) }
    }

    public func ensureBucket(_ name: BucketName) throws -> BucketRecord {
        if let existing = try bucket(name) { return existing }
        let time = configuration.now()
        return try write { try ensureBucket(name, at: time, $0) }
    }

    /// Creates the bucket if needed and returns it, share-locked until the transaction ends: its settings
    /// (versioning) cannot change and it cannot be deleted while the caller relies on them.
    private func ensureBucket(_ name: BucketName, at time: Timestamp, _ connection: Connection) throws -> BucketRecord {
        try connection.query(
            """
            INSERT INTO buckets (name, time_created, updated, metageneration, versioning, generation)
            VALUES ($1, $2, $2, 1, false, $2)
            ON CONFLICT (name) DO NOTHING
            """,
            [.text(name.rawValue), .int64(time.microseconds)])
        guard
            let record = try connection.query(Self.selectBucket + " FOR SHARE", [.text(name.rawValue)]).first(
                Codec.bucket)
        else {
            // Deleted by another node between the two statements; the transaction runs again.
            throw StorageError(
                .unavailable, "bucket \(name.rawValue) was deleted concurrently",
                cause: PostgresError(sqlState: "40001", message: "bucket deleted concurrently"))
        }
        return record
    }

    public func buckets() throws -> [BucketRecord] {
        try read { try $0.query("SELECT \(Codec.bucketColumns) FROM buckets ORDER BY name").map(Codec.bucket) }
    }

    public func createBucket(_ template: BucketRecord) throws -> BucketRecord {
        let record = BucketRecord(
            name: template.name, timeCreated: template.timeCreated, updated: template.timeCreated,
            versioning: template.versioning, resource: template.resource)
        return try write { connection in
            let inserted = try connection.query(
                """
                INSERT INTO buckets (\(Codec.bucketColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (name) DO NOTHING
                """,
                Codec.bucketValues(record))
            guard inserted.affectedRows == 1 else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(template.name.rawValue)")
            }
            return record
        }
    }

    public func updateBucket(
        _ name: BucketName, at time: Timestamp, _ change: (inout BucketRecord) throws -> Void
    ) throws -> BucketRecord {
        try write { connection in
            guard
                let stored = try connection.query(Self.selectBucket + " FOR UPDATE", [.text(name.rawValue)]).first(
                    Codec.bucket)
            else { throw StorageError(.notFound, "No such bucket: \(name.rawValue)") }
            var record = stored
            try change(&record)
            guard record.name == name else { throw StorageError(.invalidArgument, "a bucket's name cannot change") }
            // The store owns these, whatever `change` did to them.
            record.timeCreated = stored.timeCreated
            record.metageneration = stored.metageneration + 1
            record.updated = time
            record.generation = stored.generation
            try connection.query(
                "UPDATE buckets SET updated = $1, metageneration = $2, versioning = $3, resource = $4 WHERE name = $5",
                [
                    .int64(record.updated.microseconds), .int64(record.metageneration), .bool(record.versioning),
                    .text(record.resource), .text(name.rawValue),
                ])
            return record
        }
    }

    public func deleteBucket(_ name: BucketName, check: (BucketRecord) throws -> Void, softDeletion: SoftDeletion?)
        throws
    {
        try write { connection in
            // FOR UPDATE waits for inserts holding the bucket FOR SHARE; their objects are then visible below.
            guard
                let bucket = try connection.query(Self.selectBucket + " FOR UPDATE", [.text(name.rawValue)]).first(
                    Codec.bucket)
            else {
                throw StorageError(.notFound, "No such bucket: \(name.rawValue)")
            }
            try check(bucket)
            let hasVersions =
                try connection.query("SELECT 1 FROM objects WHERE bucket = $1 LIMIT 1", [.text(name.rawValue)])
                .rowCount > 0
            guard !hasVersions else {
                throw StorageError(.conflict, "The bucket you tried to delete is not empty: \(name.rawValue)")
            }
            try connection.query(
                """
                INSERT INTO blob_garbage (blob_id, registered)
                SELECT blob_id, $1 FROM soft_deleted_objects WHERE bucket = $2 ON CONFLICT DO NOTHING
                """, [.int64(configuration.now().microseconds), .text(name.rawValue)])
            try connection.query("DELETE FROM soft_deleted_objects WHERE bucket = $1", [.text(name.rawValue)])
            if let softDeletion {
                try connection.query(
                    """
                    INSERT INTO soft_deleted_buckets (\(Codec.bucketColumns), soft_deleted, hard_delete)
                    SELECT \(Codec.bucketColumns), $2, $3 FROM buckets WHERE name = $1
                    ON CONFLICT (name, generation) DO NOTHING
                    """,
                    [
                        .text(name.rawValue), .int64(softDeletion.at.microseconds),
                        .int64(softDeletion.hardDeleteAt.microseconds),
                    ])
            }
            try connection.query("DELETE FROM buckets WHERE name = $1", [.text(name.rawValue)])
        }
    }

    // MARK: Objects

    private static let selectLive =
        "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = $1 AND name = $2 AND live"
    private static let selectGeneration =
        "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = $1 AND name = $2 AND generation = $3"

    private func live(_ bucket: BucketName, _ name: ObjectName, _ connection: Connection, forUpdate: Bool = false)
        throws -> ObjectRecord?
    {
        try connection.query(
            Self.selectLive + (forUpdate ? " FOR UPDATE" : ""),
            [.text(bucket.rawValue), .bytes(Array(name.rawValue.utf8))]
        ).first(Codec.object)
    }

    /// Serializes every writer of one name, on every node, until the transaction ends. Statements after it run on
    /// a fresh snapshot (READ COMMITTED), so they see whatever the previous holder committed. A hash collision only
    /// makes two names wait for each other.
    private func lockName(_ bucket: BucketName, _ name: ObjectName, _ connection: Connection) throws {
        try connection.query(
            "SELECT pg_advisory_xact_lock($1)", [.int64(NameLock.key(nameLockNamespace, bucket, name))])
    }

    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        try read { connection in
            guard let generation else { return try live(bucket, name, connection) }
            return try connection.query(
                Self.selectGeneration, [.text(bucket.rawValue), .bytes(Array(name.rawValue.utf8)), .int64(generation)]
            ).first(Codec.object)
        }
    }

    public func insertObject(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String?
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) {
        try write { connection in
            try lockName(draft.bucket, draft.name, connection)
            let current = try live(draft.bucket, draft.name, connection, forUpdate: true)
            try conditions.check(current, describing: describe(draft.bucket, draft.name))
            // Locked, so a finalize of the same session on another node waits and then finds it final.
            let session = try sessionID.map { try activeSession($0, connection) }
            // Objects imply their bucket, as in the Firebase emulator, unless the write says otherwise.
            if !draft.createsBucket,
                try connection.query(Self.selectBucket, [.text(draft.bucket.rawValue)]).rowCount == 0
            {
                throw StorageError.noSuchBucket(draft.bucket)
            }
            let bucket = try ensureBucket(draft.bucket, at: time, connection)
            if let current {
                try retire(
                    current, versioning: bucket.versioning, softDeletion: draft.replacedSoftDeletion, at: time,
                    connection)
            }
            // Last, so the counter row (which every insert on every node updates) stays locked only briefly.
            let generation = try connection.query(
                "UPDATE counters SET value = greatest(value + 1, $1) WHERE name = 'last_generation' RETURNING value",
                [.int64(time.microseconds)]
            ).first { try $0.int64(0) }
            guard let generation else { throw StorageErrorFactory.corruptRow("generation counter (missing)") }
            let stored = ObjectRecord(
                bucket: draft.bucket, name: draft.name, generation: generation, metageneration: 1, blob: draft.blob,
                blobID: draft.blobID, fields: draft.fields, timeCreated: time, updated: time,
                componentCount: draft.componentCount)
            try connection.query(
                """
                INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))
                """,
                Codec.objectValues(stored, live: true))
            try connection.query("DELETE FROM blob_garbage WHERE blob_id = $1", [.text(draft.blobID.rawValue)])
            if let session { try storeSession(session.finalized(generation: generation, at: time), connection) }
            return (stored, current)
        }
    }

    public func updateObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, at time: Timestamp,
        _ change: (inout ObjectFields) throws -> Void
    ) throws -> ObjectRecord {
        try write { connection in
            try lockName(bucket, name, connection)
            let found =
                try generation.map {
                    try connection.query(
                        Self.selectGeneration + " FOR UPDATE",
                        [.text(bucket.rawValue), .bytes(Array(name.rawValue.utf8)), .int64($0)]
                    ).first(Codec.object)
                } ?? live(bucket, name, connection, forUpdate: true)
            guard var record = found else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, name))")
            }
            try conditions.check(record, describing: describe(bucket, name))
            try change(&record.fields)
            record.metageneration += 1
            record.updated = time
            let fields = record.fields
            try connection.query(
                """
                UPDATE objects SET metageneration = $1, updated = $2, content_type = $3, content_encoding = $4,
                    content_disposition = $5, content_language = $6, cache_control = $7, custom_time = $8,
                    custom_metadata = $9, download_tokens = $10, extra = $14
                WHERE bucket = $11 AND name = $12 AND generation = $13
                """,
                [
                    .int64(record.metageneration), .int64(time.microseconds), fields.contentType.value,
                    fields.contentEncoding.value, fields.contentDisposition.value, fields.contentLanguage.value,
                    fields.cacheControl.value, fields.customTime.map { .int64($0.microseconds) } ?? .null,
                    .text(StoredFieldJSON.encode(fields.customMetadata)),
                    .text(StoredFieldJSON.encode(fields.downloadTokens)),
                    .text(bucket.rawValue), .bytes(Array(name.rawValue.utf8)), .int64(record.generation),
                    .text(Codec.extrasJSON(fields.extras)),
                ])
            return record
        }
    }

    public func moveObject(
        _ bucket: BucketName, from source: ObjectName, to destination: ObjectName, sourceConditions: Preconditions,
        destinationConditions: Preconditions, at time: Timestamp
    ) throws -> (moved: ObjectRecord, replaced: ObjectRecord?) {
        try write { connection in
            // Both names locked in byte order, so two moves between the same names cannot deadlock.
            for name in [source, destination].sorted() { try lockName(bucket, name, connection) }
            guard let moving = try live(bucket, source, connection, forUpdate: true) else {
                throw StorageError(.notFound, "No such object: \(describe(bucket, source))")
            }
            try sourceConditions.check(moving, describing: describe(bucket, source))
            let current = try live(bucket, destination, connection, forUpdate: true)
            try destinationConditions.check(current, describing: describe(bucket, destination))
            let versioning = try ensureBucket(bucket, at: time, connection).versioning
            // The source leaves as a delete would; its blob goes with the new version, so it is not garbage.
            try connection.query(
                versioning
                    ? "UPDATE objects SET live = false WHERE bucket = $1 AND name = $2 AND generation = $3"
                    : "DELETE FROM objects WHERE bucket = $1 AND name = $2 AND generation = $3",
                [.text(bucket.rawValue), .bytes(Array(source.rawValue.utf8)), .int64(moving.generation)])
            if let current { try retire(current, versioning: versioning, softDeletion: nil, at: time, connection) }
            let generation = try connection.query(
                "UPDATE counters SET value = greatest(value + 1, $1) WHERE name = 'last_generation' RETURNING value",
                [.int64(time.microseconds)]
            ).first { try $0.int64(0) }
            guard let generation else { throw StorageErrorFactory.corruptRow("generation counter (missing)") }
            let moved = ObjectRecord(
                bucket: bucket, name: destination, generation: generation, metageneration: 1, blob: moving.blob,
                blobID: moving.blobID, fields: moving.fields, timeCreated: time, updated: time,
                componentCount: moving.componentCount)
            try connection.query(
                "INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))",
                Codec.objectValues(moved, live: true))
            return (moved, current)
        }
    }

    public func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions,
        softDeletion: SoftDeletion?
    ) throws -> ObjectRecord {
        let time = configuration.now()
        return try write { connection in
            try lockName(bucket, name, connection)
            let nameBytes = Value.bytes(Array(name.rawValue.utf8))
            let target =
                if let generation {
                    try connection.query(
                        Self.selectGeneration + " FOR UPDATE", [.text(bucket.rawValue), nameBytes, .int64(generation)]
                    ).first(Codec.object)
                } else {
                    try live(bucket, name, connection, forUpdate: true)
                }
            guard let target else { throw StorageError(.notFound, "No such object: \(describe(bucket, name))") }
            try conditions.check(target, describing: describe(bucket, name))
            let key: [Value] = [.text(bucket.rawValue), nameBytes, .int64(target.generation)]
            let versioning =
                try connection.query(
                    "SELECT versioning FROM buckets WHERE name = $1 FOR SHARE", [.text(bucket.rawValue)]
                )
                .first { try $0.bool(0) } ?? false
            if generation == nil && versioning {
                // Deleting the live version of a versioned object keeps it as a noncurrent version (GCS).
                try connection.query(
                    "UPDATE objects SET live = false WHERE bucket = $1 AND name = $2 AND generation = $3", key)
            } else {
                try removeVersion(key, target, softDeletion: softDeletion, at: time, connection)
            }
            return target
        }
    }

    public func listObjects(_ bucket: BucketName, prefix: String, startAfter: [UInt8]?, limit: Int) throws
        -> [ObjectRecord]
    {
        guard limit > 0 else { return [] }
        let lower = Array(prefix.utf8)
        let upper = ObjectName.keyAfterAllNames(startingWith: lower)
        return try read { connection in
            try connection.query(
                """
                SELECT \(Codec.objectColumns) FROM objects
                WHERE bucket = $1 AND live AND name >= $2 AND name < $3 AND name > $4
                ORDER BY name LIMIT $5
                """,
                [.text(bucket.rawValue), .bytes(lower), .bytes(upper), .bytes(startAfter ?? []), .int64(Int64(limit))]
            ).map(Codec.object)
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
    private func versionRows<Decoded: Sendable>(
        _ table: String, columns: String, _ bucket: BucketName, prefix: String, startAfter: ObjectVersionKey?,
        limit: Int, _ decode: (Row) throws -> Decoded
    ) throws -> [Decoded] {
        guard limit > 0 else { return [] }
        let prefixBytes = Array(prefix.utf8)
        // No valid UTF-8 contains 0xFF, so every name starting with the prefix sorts below prefix + 0xFF.
        let upper = ObjectName.keyAfterAllNames(startingWith: prefixBytes)
        // Names are never empty, so (empty, Int64.min) is before every version.
        let after = startAfter ?? ObjectVersionKey(name: [], generation: .min)
        // Start the range at the larger of the prefix and the key's name, so a deep page seeks straight to its key;
        // the row comparison then drops only the key's own name's earlier generations.
        let lower = prefixBytes.lexicographicallyPrecedes(after.name) ? after.name : prefixBytes
        return try read { connection in
            try connection.query(
                """
                SELECT \(columns) FROM \(table)
                WHERE bucket = $1 AND name >= $2 AND name < $3 AND (name, generation) > ($4, $5)
                ORDER BY name, generation LIMIT $6
                """,
                [
                    .text(bucket.rawValue), .bytes(lower), .bytes(upper), .bytes(after.name), .int64(after.generation),
                    .int64(Int64(limit)),
                ]
            ).map(decode)
        }
    }

    // MARK: Soft delete

    /// The live version a write replaces: kept noncurrent in a versioned bucket, else removed (``removeVersion``).
    private func retire(
        _ current: ObjectRecord, versioning: Bool, softDeletion: SoftDeletion?, at time: Timestamp,
        _ connection: Connection
    ) throws {
        let key: [Value] = [
            .text(current.bucket.rawValue), .bytes(Array(current.name.rawValue.utf8)), .int64(current.generation),
        ]
        if versioning {
            try connection.query(
                "UPDATE objects SET live = false WHERE bucket = $1 AND name = $2 AND generation = $3", key)
        } else {
            try removeVersion(key, current, softDeletion: softDeletion, at: time, connection)
        }
    }

    /// Removes the version row at `key`: into the soft-deleted versions when `softDeletion` is given (its blob stays
    /// referenced), else for good (its blob becomes garbage).
    private func removeVersion(
        _ key: [Value], _ record: ObjectRecord, softDeletion: SoftDeletion?, at time: Timestamp,
        _ connection: Connection
    ) throws {
        if let softDeletion {
            try connection.query(
                """
                INSERT INTO soft_deleted_objects (\(Codec.objectColumns), soft_deleted, hard_delete)
                SELECT \(Codec.objectColumns), $4, $5 FROM objects WHERE bucket = $1 AND name = $2 AND generation = $3
                ON CONFLICT (bucket, name, generation) DO NOTHING
                """,
                key + [.int64(softDeletion.at.microseconds), .int64(softDeletion.hardDeleteAt.microseconds)])
        } else {
            try addGarbage(record.blobID, at: time, connection)
        }
        try connection.query("DELETE FROM objects WHERE bucket = $1 AND name = $2 AND generation = $3", key)
    }

    private static let softColumns = "\(Codec.objectColumns), soft_deleted, hard_delete"
    private static let selectSoft =
        "SELECT \(softColumns) FROM soft_deleted_objects WHERE bucket = $1 AND name = $2 AND generation = $3"

    private static func softDeleted(_ row: Row) throws -> SoftDeletedObject {
        SoftDeletedObject(
            record: try Codec.object(row),
            deletion: SoftDeletion(
                at: Timestamp(microseconds: try row.int64(20)),
                hardDeleteAt: Timestamp(microseconds: try row.int64(21))))
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
            try connection.query(
                Self.selectSoft, [.text(bucket.rawValue), .bytes(Array(name.rawValue.utf8)), .int64(generation)]
            ).first(Self.softDeleted)
        }
    }

    public func restoreObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64, conditions: Preconditions, at time: Timestamp
    ) throws -> (restored: ObjectRecord, replaced: ObjectRecord?) {
        try write { connection in
            try lockName(bucket, name, connection)
            let nameBytes = Value.bytes(Array(name.rawValue.utf8))
            let softKey: [Value] = [.text(bucket.rawValue), nameBytes, .int64(generation)]
            guard let old = try connection.query(Self.selectSoft + " FOR UPDATE", softKey).first(Self.softDeleted)
            else {
                throw StorageError(.notFound, "No such soft-deleted object: \(describe(bucket, name))#\(generation)")
            }
            let current = try live(bucket, name, connection, forUpdate: true)
            try conditions.check(current, describing: describe(bucket, name))
            let versioning = try ensureBucket(bucket, at: time, connection).versioning
            if let current { try retire(current, versioning: versioning, softDeletion: nil, at: time, connection) }
            try connection.query(
                "DELETE FROM soft_deleted_objects WHERE bucket = $1 AND name = $2 AND generation = $3", softKey)
            let next = try connection.query(
                "UPDATE counters SET value = greatest(value + 1, $1) WHERE name = 'last_generation' RETURNING value",
                [.int64(time.microseconds)]
            ).first { try $0.int64(0) }
            guard let next else { throw StorageErrorFactory.corruptRow("generation counter (missing)") }
            let record = old.record
            let restored = ObjectRecord(
                bucket: bucket, name: name, generation: next, metageneration: 1, blob: record.blob,
                blobID: record.blobID, fields: record.fields, timeCreated: time, updated: time,
                componentCount: record.componentCount)
            try connection.query(
                "INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))",
                Codec.objectValues(restored, live: true))
            return (restored, current)
        }
    }

    public func softDeletedBuckets() throws -> [SoftDeletedBucket] {
        try read { connection in
            try connection.query(
                "SELECT \(Codec.bucketColumns), soft_deleted, hard_delete FROM soft_deleted_buckets ORDER BY name, generation"
            ).map { row in
                SoftDeletedBucket(
                    record: try Codec.bucket(row),
                    deletion: SoftDeletion(
                        at: Timestamp(microseconds: try row.int64(7)),
                        hardDeleteAt: Timestamp(microseconds: try row.int64(8))))
            }
        }
    }

    public func restoreBucket(_ name: BucketName, generation: Int64, at time: Timestamp) throws -> BucketRecord {
        try write { connection in
            let key: [Value] = [.text(name.rawValue), .int64(generation)]
            guard
                let record = try connection.query(
                    "SELECT \(Codec.bucketColumns) FROM soft_deleted_buckets WHERE name = $1 AND generation = $2 FOR UPDATE",
                    key
                ).first(Codec.bucket)
            else { throw StorageError(.notFound, "No such soft-deleted bucket: \(name.rawValue)#\(generation)") }
            let inserted = try connection.query(
                """
                INSERT INTO buckets (\(Codec.bucketColumns))
                SELECT \(Codec.bucketColumns) FROM soft_deleted_buckets WHERE name = $1 AND generation = $2
                ON CONFLICT (name) DO NOTHING
                """, key)
            guard inserted.affectedRows == 1 else {
                throw StorageError(.alreadyExists, "Bucket already exists: \(name.rawValue)")
            }
            try connection.query("DELETE FROM soft_deleted_buckets WHERE name = $1 AND generation = $2", key)
            return record
        }
    }

    public func purgeSoftDeleted(hardDeletedBy time: Timestamp, limit: Int) throws -> Int {
        try write { connection in
            try connection.query(
                "DELETE FROM soft_deleted_buckets WHERE hard_delete <= $1", [.int64(time.microseconds)])
            let gone = try connection.query(
                """
                WITH due AS (
                    SELECT bucket, name, generation FROM soft_deleted_objects WHERE hard_delete <= $1 LIMIT $2
                    FOR UPDATE SKIP LOCKED
                )
                DELETE FROM soft_deleted_objects s USING due
                WHERE s.bucket = due.bucket AND s.name = due.name AND s.generation = due.generation
                RETURNING s.blob_id
                """, [.int64(time.microseconds), .int64(Int64(limit))]
            ).map { $0.text(0) }
            for blob in gone {
                if let id = BlobID(rawValue: blob) { try addGarbage(id, at: time, connection) }
            }
            return gone.count
        }
    }

    // MARK: Upload sessions

    public func insertSession(_ session: UploadSession) throws {
        let record = try Codec.sessionJSON(session)
        try write { connection in
            do {
                try connection.query(
                    """
                    INSERT INTO sessions (id, blob_id, state, updated, record, caller, received)
                    VALUES ($1, $2, $3, $4, $5, $6, $7)
                    """,
                    [
                        .text(session.id), .text(session.blobID.rawValue), .text(session.state.rawValue),
                        .int64(session.updated.microseconds), .text(record), session.caller.map { .text($0) } ?? .null,
                        .int64(session.received),
                    ])
            } catch let error as StorageError where error.code == .alreadyExists {
                throw StorageError(.alreadyExists, "upload session already exists", cause: error)
            }
        }
    }

    public func session(id: String) throws -> UploadSession? {
        try read { try $0.query("SELECT record FROM sessions WHERE id = $1", [.text(id)]).first(Codec.session) }
    }

    public func updateSession(id: String, _ change: (inout UploadSession) throws -> Void) throws -> UploadSession {
        try write { connection in
            guard var session = try lockedSession(id, connection) else {
                throw StorageError(.notFound, "No such upload session")
            }
            try change(&session)
            guard session.id == id else { throw StorageError(.invalidArgument, "an upload session's id cannot change") }
            try storeSession(session, connection)
            return session
        }
    }

    private func lockedSession(_ id: String, _ connection: Connection) throws -> UploadSession? {
        try connection.query("SELECT record FROM sessions WHERE id = $1 FOR UPDATE", [.text(id)]).first(Codec.session)
    }

    /// The session `id`, locked, which must still be active (a finalize in progress).
    private func activeSession(_ id: String, _ connection: Connection) throws -> UploadSession {
        guard let session = try lockedSession(id, connection) else {
            throw StorageError(.notFound, "No such upload session")
        }
        guard session.state == .active else { throw UploadSession.notActive(id, state: session.state) }
        return session
    }

    private func storeSession(_ session: UploadSession, _ connection: Connection) throws {
        try connection.query(
            """
            UPDATE sessions SET blob_id = $1, state = $2, updated = $3, record = $4, caller = $5, received = $6
            WHERE id = $7
            """,
            [
                .text(session.blobID.rawValue), .text(session.state.rawValue),
                .int64(session.updated.microseconds), .text(try Codec.sessionJSON(session)),
                session.caller.map { .text($0) } ?? .null, .int64(session.received), .text(session.id),
            ])
    }

    public func sessions(updatedBefore time: Timestamp) throws -> [UploadSession] {
        try read { connection in
            try connection.query(
                "SELECT record FROM sessions WHERE updated < $1 ORDER BY updated, id", [.int64(time.microseconds)]
            ).map(Codec.session)
        }
    }

    public func sessions(idPrefix prefix: String, after startAfter: String?, limit: Int) throws -> [UploadSession] {
        guard limit > 0 else { return [] }
        let end = try UploadSession.idRangeEnd(prefix)
        return try read { connection in
            try connection.query(
                "SELECT record FROM sessions WHERE id >= $1 AND id < $2 AND id > $3 ORDER BY id LIMIT $4",
                [.text(prefix), .text(end), .text(startAfter ?? ""), .int64(Int64(limit))]
            ).map(Codec.session)
        }
    }

    public func deleteSession(id: String) throws {
        try write { _ = try $0.query("DELETE FROM sessions WHERE id = $1", [.text(id)]) }
    }

    // MARK: Documents

    public func document(_ name: String) throws -> String? {
        try read { try $0.query("SELECT body FROM documents WHERE name = $1", [.text(name)]).first { $0.text(0) } }
    }

    public func updateDocument(_ name: String, _ change: (inout String?) throws -> Void) throws {
        try write { connection in
            // The row exists before it is locked, so two nodes creating the first document wait for each other
            // instead of one failing on the primary key.
            try connection.query(
                "INSERT INTO documents (name, body) VALUES ($1, '') ON CONFLICT (name) DO NOTHING", [.text(name)])
            let stored = try connection.query(
                "SELECT body FROM documents WHERE name = $1 FOR UPDATE", [.text(name)]
            ).first { $0.text(0) }
            var text = stored.flatMap { $0.isEmpty ? nil : $0 }
            try change(&text)
            if let text {
                try connection.query("UPDATE documents SET body = $2 WHERE name = $1", [.text(name), .text(text)])
            } else {
                try connection.query("DELETE FROM documents WHERE name = $1", [.text(name)])
            }
        }
    }

    public func activeSessionUsage(caller: String, updatedSince time: Timestamp) throws -> SessionUsage {
        try read { connection in
            try connection.query(
                """
                SELECT count(*), coalesce(sum(received), 0)::bigint FROM sessions
                WHERE caller = $1 AND state = 'active' AND updated >= $2
                """, [.text(caller), .int64(time.microseconds)]
            ).first { SessionUsage(sessions: Int(try $0.int64(0)), bytes: try $0.int64(1)) }
                ?? SessionUsage(sessions: 0, bytes: 0)
        }
    }

    // MARK: Blob bookkeeping

    private func addGarbage(_ id: BlobID, at time: Timestamp, _ connection: Connection) throws {
        try connection.query(
            "INSERT INTO blob_garbage (blob_id, registered) VALUES ($1, $2) ON CONFLICT (blob_id) DO NOTHING",
            [.text(id.rawValue), .int64(time.microseconds)])
    }

    public func registerPendingBlob(_ id: BlobID, at time: Timestamp) throws {
        try write { try addGarbage(id, at: time, $0) }
    }

    public func garbageBlobs(registeredBefore time: Timestamp, limit: Int) throws -> [BlobID] {
        guard limit > 0 else { return [] }
        return try read { connection in
            try connection.query(
                """
                SELECT g.blob_id FROM blob_garbage g
                WHERE g.registered < $1
                    AND NOT EXISTS (SELECT 1 FROM objects o WHERE o.blob_id = g.blob_id)
                    AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.blob_id = g.blob_id AND s.state = 'active')
                ORDER BY g.registered, g.blob_id LIMIT $2
                """,
                [.int64(time.microseconds), .int64(Int64(limit))]
            ).map(Codec.blobID)
        }
    }

    public func forgetBlob(_ id: BlobID) throws {
        try write { _ = try $0.query("DELETE FROM blob_garbage WHERE blob_id = $1", [.text(id.rawValue)]) }
    }

    public func isBlobReferenced(_ id: BlobID) throws -> Bool {
        try read { connection in
            try connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM objects WHERE blob_id = $1)
                    OR EXISTS (SELECT 1 FROM sessions WHERE blob_id = $1 AND state = 'active')
                    OR EXISTS (SELECT 1 FROM soft_deleted_objects WHERE blob_id = $1)
                """, [.text(id.rawValue)]
            ).first { try $0.bool(0) } ?? false
        }
    }

    public func reset() throws {
        let time = Value.int64(configuration.now().microseconds)
        try write { connection in
            // EXCLUSIVE lets reads continue and makes concurrent writers wait until the reset has committed.
            try connection.execute(
                "LOCK TABLE buckets, objects, sessions, blob_garbage, soft_deleted_objects, soft_deleted_buckets IN EXCLUSIVE MODE"
            )
            try connection.query(
                """
                INSERT INTO blob_garbage (blob_id, registered) SELECT blob_id, $1 FROM soft_deleted_objects
                ON CONFLICT DO NOTHING
                """, [time])
            try connection.execute("DELETE FROM soft_deleted_objects; DELETE FROM soft_deleted_buckets")
            try connection.query(
                "INSERT INTO blob_garbage (blob_id, registered) SELECT blob_id, $1 FROM objects ON CONFLICT DO NOTHING",
                [time])
            try connection.query(
                "INSERT INTO blob_garbage (blob_id, registered) SELECT blob_id, $1 FROM sessions ON CONFLICT DO NOTHING",
                [time])
            try connection.execute("DELETE FROM objects; DELETE FROM sessions; DELETE FROM buckets")
        }
    }

    // MARK: Test hooks

    /// Runs a query and returns every row, each column as text (the query must cast non-text columns to text).
    @_spi(Testing) public func textRows(_ sql: String) throws -> [[String?]] {
        try read { connection in
            try connection.query(sql).map { row in (0..<row.columnCount).map { row.optionalText($0) } }
        }
    }

    /// The first column of the first row of `textRows(sql)`.
    @_spi(Testing) public func scalar(_ sql: String) throws -> String? {
        try textRows(sql).first?.first ?? nil
    }

    /// Holds one pooled connection while `body` runs, and passes it the server process id of that connection.
    @_spi(Testing) public func withPooledConnection<Result>(_ body: (Int32) throws -> Result) throws -> Result {
        try pool.withConnection { try body($0.backendPID) }
    }

    /// Drops a schema made with `Configuration.schema`, and everything in it (test clean-up).
    @_spi(Testing) public static func dropSchema(_ schema: String, url: String) throws {
        let name = try SchemaName(schema)
        let connection = try Connection(conninfo: try PostgresURL(url).conninfo, trace: nil)
        try connection.execute("DROP SCHEMA IF EXISTS \(name.quoted) CASCADE")
    }

    /// Connections open right now, idle or in use, and the most the pool opens.
    @_spi(Testing) public var poolStatistics: (open: Int, idle: Int, capacity: Int) {
        (pool.openCount, pool.idleCount, pool.capacity)
    }
}

private func describe(_ bucket: BucketName, _ name: ObjectName) -> String {
    "\(bucket.rawValue)/\(name.rawValue)"
}
