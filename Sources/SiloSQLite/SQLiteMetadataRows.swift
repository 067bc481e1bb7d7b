public import SiloCore
internal import SiloWire

/// The row operations of ``SQLiteMetadataStore``'s write transactions: one prepared statement each (two where
/// noted), on the writer connection inside its `BEGIN IMMEDIATE` transaction. One writer runs at a time, so reads
/// need no locks and ``lockName(_:_:)`` is a no-op.
public struct SQLiteMetadataRows: MetadataRows {
    private let connection: Connection
    /// The highest generation assigned so far, this transaction's included; the store keeps it only on commit.
    private(set) var lastGeneration: Int64

    init(connection: Connection, lastGeneration: Int64) {
        self.connection = connection
        self.lastGeneration = lastGeneration
    }

    private static func key(_ bucket: BucketName, _ name: ObjectName, _ generation: Int64) -> [SQLValue] {
        [.text(bucket.rawValue), .blob(Array(name.rawValue.utf8)), .integer(generation)]
    }

    private static func key(_ record: ObjectRecord) -> [SQLValue] {
        key(record.bucket, record.name, record.generation)
    }

    // MARK: Buckets

    public mutating func bucket(_ name: BucketName, lock: BucketLock) throws -> BucketRecord? {
        try connection.row(SQLiteMetadataStore.selectBucket, [.text(name.rawValue)], Codec.bucket)
    }

    /// Two statements: the insert, then the read of what is there.
    public mutating func ensureBucket(_ name: BucketName, at time: Timestamp) throws -> BucketRecord {
        try connection.run(
            """
            INSERT OR IGNORE INTO buckets (name, time_created, updated, metageneration, versioning, generation)
            VALUES (?1, ?2, ?2, 1, 0, ?2)
            """,
            [.text(name.rawValue), .integer(time.microseconds)])
        guard let record = try bucket(name, lock: .share) else {
            throw StorageError(.internalError, "bucket \(name) vanished inside its transaction")
        }
        return record
    }

    public mutating func insertBucket(_ record: BucketRecord) throws -> Bool {
        try connection.run(
            "INSERT OR IGNORE INTO buckets (\(Codec.bucketColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)",
            Codec.bucketValues(record))
        return connection.changes == 1
    }

    public mutating func updateBucket(_ record: BucketRecord) throws {
        try connection.run(
            "UPDATE buckets SET updated = ?, metageneration = ?, versioning = ?, resource = ? WHERE name = ?",
            [
                .integer(record.updated.microseconds), .integer(record.metageneration),
                .integer(record.versioning ? 1 : 0), .text(record.resource), .text(record.name.rawValue),
            ])
    }

    public mutating func bucketHasVersions(_ name: BucketName) throws -> Bool {
        // A prefix of the primary key (bucket, name, generation): one index probe, live or noncurrent alike.
        try connection.row("SELECT 1 FROM objects WHERE bucket = ? LIMIT 1", [.text(name.rawValue)]) { _ in true }
            ?? false
    }

    /// Two statements with `softDeletion`: the copy into the soft-deleted buckets, then the delete.
    public mutating func deleteBucket(_ name: BucketName, softDeletion: SoftDeletion?) throws {
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

    public mutating func softDeletedBucket(_ name: BucketName, generation: Int64) throws -> BucketRecord? {
        try connection.row(
            "SELECT \(Codec.bucketColumns) FROM soft_deleted_buckets WHERE name = ? AND generation = ?",
            [.text(name.rawValue), .integer(generation)], Codec.bucket)
    }

    public mutating func deleteSoftDeletedBucket(_ name: BucketName, generation: Int64) throws {
        try connection.run(
            "DELETE FROM soft_deleted_buckets WHERE name = ? AND generation = ?",
            [.text(name.rawValue), .integer(generation)])
    }

    public mutating func deleteSoftDeletedBuckets(hardDeletedBy time: Timestamp) throws {
        try connection.run("DELETE FROM soft_deleted_buckets WHERE hard_delete <= ?", [.integer(time.microseconds)])
    }

    // MARK: Object versions

    /// The writer lock already serializes every writer.
    public mutating func lockName(_ bucket: BucketName, _ name: ObjectName) throws {}

    public mutating func liveVersion(_ bucket: BucketName, _ name: ObjectName) throws -> ObjectRecord? {
        try connection.row(
            SQLiteMetadataStore.selectLive, [.text(bucket.rawValue), .blob(Array(name.rawValue.utf8))], Codec.object)
    }

    public mutating func version(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> ObjectRecord?
    {
        try connection.row(SQLiteMetadataStore.selectGeneration, Self.key(bucket, name, generation), Codec.object)
    }

    /// One counter for every name: SQLite has one writer, so a counter row costs no waiting.
    public mutating func nextGeneration(for bucket: BucketName, _ name: ObjectName, at time: Timestamp) throws -> Int64
    {
        let generation = max(time.microseconds, lastGeneration + 1)
        try connection.run("UPDATE counters SET value = ? WHERE name = 'last_generation'", [.integer(generation)])
        lastGeneration = generation
        return generation
    }

    public mutating func insertLiveVersion(_ record: ObjectRecord) throws {
        try connection.run(
            "INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))",
            Codec.objectValues(record, live: true))
    }

    public mutating func updateVersion(_ record: ObjectRecord) throws {
        let fields = record.fields
        try connection.run(
            """
            UPDATE objects SET metageneration = ?, updated = ?, content_type = ?, content_encoding = ?,
                content_disposition = ?, content_language = ?, cache_control = ?, custom_time = ?,
                custom_metadata = ?, download_tokens = ?, extra = ?
            WHERE bucket = ? AND name = ? AND generation = ?
            """,
            [
                .integer(record.metageneration), .integer(record.updated.microseconds), fields.contentType.sqlValue,
                fields.contentEncoding.sqlValue, fields.contentDisposition.sqlValue, fields.contentLanguage.sqlValue,
                fields.cacheControl.sqlValue, fields.customTime.map { .integer($0.microseconds) } ?? .null,
                .text(StoredFieldJSON.encode(fields.customMetadata)),
                .text(StoredFieldJSON.encode(fields.downloadTokens)), .text(Codec.extrasJSON(fields.extras)),
            ] + Self.key(record))
    }

    public mutating func markNoncurrent(_ record: ObjectRecord) throws {
        try connection.run(
            "UPDATE objects SET live = 0 WHERE bucket = ? AND name = ? AND generation = ?", Self.key(record))
    }

    /// Two statements with `softDeletion`: the copy into the soft-deleted versions, then the delete.
    public mutating func deleteVersion(_ record: ObjectRecord, softDeletion: SoftDeletion?) throws {
        let key = Self.key(record)
        if let softDeletion {
            try connection.run(
                """
                INSERT OR REPLACE INTO soft_deleted_objects (\(Codec.objectColumns), soft_deleted, hard_delete)
                SELECT \(Codec.objectColumns), ?, ? FROM objects WHERE bucket = ? AND name = ? AND generation = ?
                """,
                [.integer(softDeletion.at.microseconds), .integer(softDeletion.hardDeleteAt.microseconds)] + key)
        }
        try connection.run("DELETE FROM objects WHERE bucket = ? AND name = ? AND generation = ?", key)
    }

    // MARK: Soft-deleted versions

    public mutating func softDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    {
        try connection.row(
            SQLiteMetadataStore.selectSoftDeleted, Self.key(bucket, name, generation), SQLiteMetadataStore.softDeleted)
    }

    public mutating func deleteSoftDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64)
        throws
    {
        try connection.run(
            "DELETE FROM soft_deleted_objects WHERE bucket = ? AND name = ? AND generation = ?",
            Self.key(bucket, name, generation))
    }

    /// One statement: the delete returns what it removed.
    public mutating func deleteSoftDeletedVersions(hardDeletedBy time: Timestamp, limit: Int) throws -> [BlobID] {
        try connection.rows(
            """
            DELETE FROM soft_deleted_objects WHERE (bucket, name, generation) IN (
                SELECT bucket, name, generation FROM soft_deleted_objects WHERE hard_delete <= ? LIMIT ?
            ) RETURNING blob_id
            """,
            [.integer(time.microseconds), .integer(Int64(limit))]
        ) { $0.text(0) }.compactMap(BlobID.init(rawValue:))
    }

    /// Two statements: the blobs onto the garbage list, then the delete.
    public mutating func deleteSoftDeletedVersions(inBucket name: BucketName, garbageAt time: Timestamp) throws {
        try connection.run(
            """
            INSERT OR IGNORE INTO blob_garbage (blob_id, registered)
            SELECT blob_id, ? FROM soft_deleted_objects WHERE bucket = ?
            """, [.integer(time.microseconds), .text(name.rawValue)])
        try connection.run("DELETE FROM soft_deleted_objects WHERE bucket = ?", [.text(name.rawValue)])
    }

    // MARK: Upload sessions

    public mutating func session(id: String) throws -> UploadSession? {
        try connection.row(SQLiteMetadataStore.selectSession, [.text(id)]) { try Codec.session($0.text(0)) }
    }

    /// Throws `.alreadyExists` from the primary key.
    public mutating func insertSession(_ session: UploadSession) throws {
        try connection.run(
            "INSERT INTO sessions (\(Codec.sessionColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            try Codec.sessionValues(session))
    }

    public mutating func updateSession(_ session: UploadSession) throws {
        try connection.run(
            """
            UPDATE sessions SET blob_id = ?2, state = ?3, updated = ?4, record = ?5, caller = ?6, received = ?7
            WHERE id = ?1
            """, try Codec.sessionValues(session))
    }

    public mutating func deleteSession(id: String) throws {
        try connection.run("DELETE FROM sessions WHERE id = ?", [.text(id)])
    }

    // MARK: Blob bookkeeping

    public mutating func addGarbage(_ id: BlobID, at time: Timestamp) throws {
        try connection.run(
            "INSERT OR IGNORE INTO blob_garbage (blob_id, registered) VALUES (?, ?)",
            [.text(id.rawValue), .integer(time.microseconds)])
    }

    public mutating func removeGarbage(_ id: BlobID) throws {
        try connection.run("DELETE FROM blob_garbage WHERE blob_id = ?", [.text(id.rawValue)])
    }

    public mutating func takeGarbage(_ id: BlobID) throws -> Bool {
        try connection.run("DELETE FROM blob_garbage WHERE blob_id = ? AND collecting IS NULL", [.text(id.rawValue)])
        return connection.changes > 0
    }

    public mutating func garbageEntry(_ id: BlobID) throws -> GarbageEntry? {
        try connection.row(
            "SELECT registered, collecting FROM blob_garbage WHERE blob_id = ?", [.text(id.rawValue)]
        ) { row in
            GarbageEntry(
                registered: Timestamp(microseconds: row.int64(0)),
                collecting: row.optionalInt64(1).map(Timestamp.init(microseconds:)))
        }
    }

    public mutating func markCollecting(_ id: BlobID, at time: Timestamp) throws {
        try connection.run(
            "UPDATE blob_garbage SET collecting = ? WHERE blob_id = ?",
            [.integer(time.microseconds), .text(id.rawValue)])
    }

    public mutating func blobIsReferenced(_ id: BlobID) throws -> Bool {
        try connection.row(SQLiteMetadataStore.blobReferenced, [.text(id.rawValue)]) { $0.int64(0) != 0 } ?? false
    }

    public mutating func insertInlineBlob(_ id: BlobID, _ bytes: [UInt8]) throws {
        try connection.run(
            "INSERT INTO inline_blobs (blob_id, bytes) VALUES (?, ?)", [.text(id.rawValue), .blob(bytes)])
    }

    public mutating func deleteInlineBlob(_ id: BlobID) throws {
        try connection.run("DELETE FROM inline_blobs WHERE blob_id = ?", [.text(id.rawValue)])
    }

    public mutating func deleteAllButDocuments(garbageAt time: Timestamp) throws {
        let registered = SQLValue.integer(time.microseconds)
        for table in ["objects", "sessions", "soft_deleted_objects"] {
            try connection.run(
                "INSERT OR IGNORE INTO blob_garbage (blob_id, registered) SELECT blob_id, ? FROM \(table)",
                [registered])
        }
        try connection.execute(
            """
            DELETE FROM soft_deleted_objects; DELETE FROM soft_deleted_buckets; DELETE FROM objects;
            DELETE FROM sessions; DELETE FROM buckets; DELETE FROM bucket_usage
            """)
    }

    // MARK: Documents

    public mutating func document(_ name: String) throws -> String? {
        try connection.row("SELECT body FROM documents WHERE name = ?", [.text(name)]) { $0.text(0) }
    }

    public mutating func storeDocument(_ name: String, _ text: String?) throws {
        if let text {
            try connection.run(
                "INSERT INTO documents (name, body) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body",
                [.text(name), .text(text)])
        } else {
            try connection.run("DELETE FROM documents WHERE name = ?", [.text(name)])
        }
    }

    // MARK: Event outbox and usage

    public mutating func appendEvent(_ event: StorageEvent) throws {
        try connection.run(
            "INSERT INTO event_outbox (kind, object, time, due) VALUES (?1, ?2, ?3, ?3)",
            [.text(event.kind.rawValue), .text(try Codec.json(event.object)), .integer(event.time.microseconds)])
    }

    /// One statement: the update returns what it leased.
    public mutating func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws
        -> [OutboxEvent]
    {
        try connection.rows(
            """
            UPDATE event_outbox SET lease_owner = ?1, lease_until = ?2 WHERE sequence IN (
                SELECT sequence FROM event_outbox WHERE due <= ?3 AND (lease_until IS NULL OR lease_until <= ?3)
                ORDER BY sequence LIMIT ?4
            ) RETURNING sequence, kind, object, time, attempts
            """,
            [.text(owner), .integer(leaseUntil.microseconds), .integer(now.microseconds), .integer(Int64(limit))],
            Codec.outboxEvent
        ).sorted { $0.sequence < $1.sequence }
    }

    public mutating func deleteEvent(_ sequence: Int64) throws {
        try connection.run("DELETE FROM event_outbox WHERE sequence = ?", [.integer(sequence)])
    }

    public mutating func releaseEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws {
        try connection.run(
            """
            UPDATE event_outbox SET attempts = attempts + 1, due = ?1, lease_owner = NULL, lease_until = NULL
            WHERE sequence = ?2 AND lease_owner = ?3
            """, [.integer(retryAt.microseconds), .integer(sequence), .text(owner)])
    }

    public mutating func outboxStatus() throws -> OutboxStatus {
        try connection.row("SELECT count(*), min(time) FROM event_outbox") {
            OutboxStatus(pending: Int($0.int64(0)), oldest: $0.optionalInt64(1).map(Timestamp.init(microseconds:)))
        } ?? OutboxStatus(pending: 0, oldest: nil)
    }

    public mutating func addUsage(_ bucket: BucketName, _ delta: BucketUsage) throws {
        try connection.run(
            """
            INSERT INTO bucket_usage (bucket, objects, bytes, noncurrent_objects, noncurrent_bytes)
            VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (bucket) DO UPDATE SET objects = objects + ?2, bytes = bytes + ?3,
                noncurrent_objects = noncurrent_objects + ?4, noncurrent_bytes = noncurrent_bytes + ?5
            """,
            [
                .text(bucket.rawValue), .integer(delta.objects), .integer(delta.bytes),
                .integer(delta.noncurrentObjects), .integer(delta.noncurrentBytes),
            ])
    }

    public mutating func bucketUsage() throws -> [BucketName: BucketUsage] {
        Dictionary(
            try connection.rows(
                """
                SELECT b.name, coalesce(u.objects, 0), coalesce(u.bytes, 0), coalesce(u.noncurrent_objects, 0),
                    coalesce(u.noncurrent_bytes, 0)
                FROM buckets b LEFT JOIN bucket_usage u ON u.bucket = b.name
                """
            ) {
                (
                    try BucketName($0.text(0)),
                    BucketUsage(
                        objects: $0.int64(1), bytes: $0.int64(2), noncurrentObjects: $0.int64(3),
                        noncurrentBytes: $0.int64(4))
                )
            }, uniquingKeysWith: { a, _ in a })
    }
}
