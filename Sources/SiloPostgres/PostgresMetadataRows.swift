public import SiloCore
internal import SiloWire

/// The row operations of ``PostgresMetadataStore``'s write transactions: one statement each, two where noted, inside
/// a READ COMMITTED transaction on one pooled connection. A statement whose result nothing reads (the name lock, the
/// inserts and updates of rows, usage, events and garbage) is queued (``Connection/queue(_:_:)``) and sent with the
/// next one that is read, or with COMMIT: an upload's trailing writes and its COMMIT are one round trip.
///
/// Other nodes write at the same time, so reads lock what they return (`FOR UPDATE`; buckets `FOR SHARE` while a
/// write relies on their settings) and ``lockName(_:_:)`` takes a transaction-scoped advisory lock.
public struct PostgresMetadataRows: MetadataRows {
    private let connection: Connection
    /// Mixed into name-lock keys, so deployments in different schemas of one database do not wait for each other.
    private let nameLockNamespace: String

    init(connection: Connection, nameLockNamespace: String) {
        self.connection = connection
        self.nameLockNamespace = nameLockNamespace
    }

    private static func key(_ bucket: BucketName, _ name: ObjectName, _ generation: Int64) -> [Value] {
        [.text(bucket.rawValue), .bytes(Array(name.rawValue.utf8)), .int64(generation)]
    }

    private static func key(_ record: ObjectRecord) -> [Value] { key(record.bucket, record.name, record.generation) }

    // MARK: Buckets

    public mutating func bucket(_ name: BucketName, lock: BucketLock) throws -> BucketRecord? {
        let suffix =
            switch lock {
            case .share: " FOR SHARE"
            case .update: " FOR UPDATE"
            }
        return try connection.query(PostgresMetadataStore.selectBucket + suffix, [.text(name.rawValue)]).first(
            Codec.bucket)
    }

    /// Two statements: the insert, then the locking read of what is there.
    public mutating func ensureBucket(_ name: BucketName, at time: Timestamp) throws -> BucketRecord {
        try connection.query(
            """
            INSERT INTO buckets (name, time_created, updated, metageneration, versioning, generation)
            VALUES ($1, $2, $2, 1, false, $2)
            ON CONFLICT (name) DO NOTHING
            """,
            [.text(name.rawValue), .int64(time.microseconds)])
        guard let record = try bucket(name, lock: .share) else {
            // Deleted by another node between the two statements; the transaction runs again.
            throw StorageError(
                .unavailable, "bucket \(name.rawValue) was deleted concurrently",
                cause: PostgresError(sqlState: "40001", message: "bucket deleted concurrently"))
        }
        return record
    }

    public mutating func insertBucket(_ record: BucketRecord) throws -> Bool {
        try connection.query(
            """
            INSERT INTO buckets (\(Codec.bucketColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (name) DO NOTHING
            """,
            Codec.bucketValues(record)
        ).affectedRows == 1
    }

    public mutating func updateBucket(_ record: BucketRecord) throws {
        try connection.query(
            "UPDATE buckets SET updated = $1, metageneration = $2, versioning = $3, resource = $4 WHERE name = $5",
            [
                .int64(record.updated.microseconds), .int64(record.metageneration), .bool(record.versioning),
                .text(record.resource), .text(record.name.rawValue),
            ])
    }

    public mutating func bucketHasVersions(_ name: BucketName) throws -> Bool {
        try connection.query("SELECT 1 FROM objects WHERE bucket = $1 LIMIT 1", [.text(name.rawValue)]).rowCount > 0
    }

    /// Two statements with `softDeletion`: the copy into the soft-deleted buckets, then the delete.
    public mutating func deleteBucket(_ name: BucketName, softDeletion: SoftDeletion?) throws {
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

    public mutating func softDeletedBucket(_ name: BucketName, generation: Int64) throws -> BucketRecord? {
        try connection.query(
            "SELECT \(Codec.bucketColumns) FROM soft_deleted_buckets WHERE name = $1 AND generation = $2 FOR UPDATE",
            [.text(name.rawValue), .int64(generation)]
        ).first(Codec.bucket)
    }

    public mutating func deleteSoftDeletedBucket(_ name: BucketName, generation: Int64) throws {
        try connection.query(
            "DELETE FROM soft_deleted_buckets WHERE name = $1 AND generation = $2",
            [.text(name.rawValue), .int64(generation)])
    }

    public mutating func deleteSoftDeletedBuckets(hardDeletedBy time: Timestamp) throws {
        try connection.query("DELETE FROM soft_deleted_buckets WHERE hard_delete <= $1", [.int64(time.microseconds)])
    }

    // MARK: Object versions

    /// Serializes every writer of one name, on every node, until the transaction ends. Statements after it run on
    /// a fresh snapshot (READ COMMITTED), so they see whatever the previous holder committed. A hash collision only
    /// makes two names wait for each other.
    public mutating func lockName(_ bucket: BucketName, _ name: ObjectName) throws {
        try connection.queue(
            "SELECT pg_advisory_xact_lock($1)", [.int64(NameLock.key(nameLockNamespace, bucket, name))])
    }

    public mutating func liveVersion(_ bucket: BucketName, _ name: ObjectName) throws -> ObjectRecord? {
        try connection.query(
            PostgresMetadataStore.selectLive + " FOR UPDATE",
            [.text(bucket.rawValue), .bytes(Array(name.rawValue.utf8))]
        ).first(Codec.object)
    }

    public mutating func version(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> ObjectRecord?
    {
        try connection.query(PostgresMetadataStore.selectGeneration + " FOR UPDATE", Self.key(bucket, name, generation))
            .first(Codec.object)
    }

    /// The counter row of the name's stripe, moved to `max(now, last + 1)`. One row for every insert serialized
    /// every write of every node on its row lock (bench/nodes.py showed most transactions waiting on it); a name
    /// always maps to the same one of ``GenerationStripes/count`` rows, so its generations still only grow.
    public mutating func nextGeneration(for bucket: BucketName, _ name: ObjectName, at time: Timestamp) throws
        -> Int64
    {
        let generation = try connection.query(
            "UPDATE counters SET value = greatest(value + 1, $1) WHERE name = $2 RETURNING value",
            [.int64(time.microseconds), .text(GenerationStripes.counter(bucket, name))]
        ).first { try $0.int64(0) }
        guard let generation else { throw StorageErrorFactory.corruptRow("generation counter (missing)") }
        return generation
    }

    public mutating func insertLiveVersion(_ record: ObjectRecord) throws {
        try connection.queue(
            "INSERT INTO objects (\(Codec.objectColumns), live) VALUES (\(Codec.objectPlaceholders))",
            Codec.objectValues(record, live: true))
    }

    public mutating func updateVersion(_ record: ObjectRecord) throws {
        let fields = record.fields
        try connection.queue(
            """
            UPDATE objects SET metageneration = $4, updated = $5, content_type = $6, content_encoding = $7,
                content_disposition = $8, content_language = $9, cache_control = $10, custom_time = $11,
                custom_metadata = $12, download_tokens = $13, extra = $14
            WHERE bucket = $1 AND name = $2 AND generation = $3
            """,
            Self.key(record) + [
                .int64(record.metageneration), .int64(record.updated.microseconds), fields.contentType.value,
                fields.contentEncoding.value, fields.contentDisposition.value, fields.contentLanguage.value,
                fields.cacheControl.value, fields.customTime.map { .int64($0.microseconds) } ?? .null,
                .text(StoredFieldJSON.encode(fields.customMetadata)),
                .text(StoredFieldJSON.encode(fields.downloadTokens)), .text(Codec.extrasJSON(fields.extras)),
            ])
    }

    public mutating func markNoncurrent(_ record: ObjectRecord) throws {
        try connection.queue(
            "UPDATE objects SET live = false WHERE bucket = $1 AND name = $2 AND generation = $3", Self.key(record))
    }

    /// Two statements with `softDeletion`: the copy into the soft-deleted versions, then the delete.
    public mutating func deleteVersion(_ record: ObjectRecord, softDeletion: SoftDeletion?) throws {
        let key = Self.key(record)
        if let softDeletion {
            try connection.queue(
                """
                INSERT INTO soft_deleted_objects (\(Codec.objectColumns), soft_deleted, hard_delete)
                SELECT \(Codec.objectColumns), $4, $5 FROM objects WHERE bucket = $1 AND name = $2 AND generation = $3
                ON CONFLICT (bucket, name, generation) DO NOTHING
                """,
                key + [.int64(softDeletion.at.microseconds), .int64(softDeletion.hardDeleteAt.microseconds)])
        }
        try connection.queue("DELETE FROM objects WHERE bucket = $1 AND name = $2 AND generation = $3", key)
    }

    // MARK: Soft-deleted versions

    public mutating func softDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64) throws
        -> SoftDeletedObject?
    {
        try connection.query(
            PostgresMetadataStore.selectSoftDeleted + " FOR UPDATE", Self.key(bucket, name, generation)
        )
        .first(PostgresMetadataStore.softDeleted)
    }

    public mutating func deleteSoftDeletedVersion(_ bucket: BucketName, _ name: ObjectName, generation: Int64)
        throws
    {
        try connection.query(
            "DELETE FROM soft_deleted_objects WHERE bucket = $1 AND name = $2 AND generation = $3",
            Self.key(bucket, name, generation))
    }

    /// One statement; rows another node is purging are skipped rather than waited for.
    public mutating func deleteSoftDeletedVersions(hardDeletedBy time: Timestamp, limit: Int) throws -> [BlobID] {
        try connection.query(
            """
            WITH due AS (
                SELECT bucket, name, generation FROM soft_deleted_objects WHERE hard_delete <= $1 LIMIT $2
                FOR UPDATE SKIP LOCKED
            )
            DELETE FROM soft_deleted_objects s USING due
            WHERE s.bucket = due.bucket AND s.name = due.name AND s.generation = due.generation
            RETURNING s.blob_id
            """, [.int64(time.microseconds), .int64(Int64(limit))]
        ).map { $0.text(0) }.compactMap(BlobID.init(rawValue:))
    }

    /// Two statements: the blobs onto the garbage list, then the delete.
    public mutating func deleteSoftDeletedVersions(inBucket name: BucketName, garbageAt time: Timestamp) throws {
        try connection.query(
            """
            INSERT INTO blob_garbage (blob_id, registered)
            SELECT blob_id, $1 FROM soft_deleted_objects WHERE bucket = $2 ON CONFLICT DO NOTHING
            """, [.int64(time.microseconds), .text(name.rawValue)])
        try connection.query("DELETE FROM soft_deleted_objects WHERE bucket = $1", [.text(name.rawValue)])
    }

    // MARK: Upload sessions

    public mutating func session(id: String) throws -> UploadSession? {
        try connection.query(PostgresMetadataStore.selectSession + " FOR UPDATE", [.text(id)]).first(Codec.session)
    }

    /// Throws `.alreadyExists` from the primary key.
    public mutating func insertSession(_ session: UploadSession) throws {
        try connection.query(
            "INSERT INTO sessions (\(Codec.sessionColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            try Codec.sessionValues(session))
    }

    public mutating func updateSession(_ session: UploadSession) throws {
        try connection.queue(
            """
            UPDATE sessions SET blob_id = $2, state = $3, updated = $4, record = $5, caller = $6, received = $7
            WHERE id = $1
            """, try Codec.sessionValues(session))
    }

    public mutating func deleteSession(id: String) throws {
        try connection.queue("DELETE FROM sessions WHERE id = $1", [.text(id)])
    }

    // MARK: Blob bookkeeping

    public mutating func addGarbage(_ id: BlobID, at time: Timestamp) throws {
        try connection.queue(
            "INSERT INTO blob_garbage (blob_id, registered) VALUES ($1, $2) ON CONFLICT (blob_id) DO NOTHING",
            [.text(id.rawValue), .int64(time.microseconds)])
    }

    public mutating func removeGarbage(_ id: BlobID) throws {
        try connection.queue("DELETE FROM blob_garbage WHERE blob_id = $1", [.text(id.rawValue)])
    }

    public mutating func takeGarbage(_ id: BlobID) throws -> Bool {
        try connection.query(
            "DELETE FROM blob_garbage WHERE blob_id = $1 AND collecting IS NULL", [.text(id.rawValue)]
        ).affectedRows > 0
    }

    public mutating func garbageEntry(_ id: BlobID) throws -> GarbageEntry? {
        try connection.query(
            "SELECT registered, collecting FROM blob_garbage WHERE blob_id = $1 FOR UPDATE", [.text(id.rawValue)]
        ).first { row in
            GarbageEntry(
                registered: Timestamp(microseconds: try row.int64(0)),
                collecting: try row.optionalInt64(1).map(Timestamp.init(microseconds:)))
        }
    }

    public mutating func markCollecting(_ id: BlobID, at time: Timestamp) throws {
        try connection.query(
            "UPDATE blob_garbage SET collecting = $2 WHERE blob_id = $1",
            [.text(id.rawValue), .int64(time.microseconds)])
    }

    public mutating func insertInlineBlob(_ id: BlobID, _ bytes: [UInt8]) throws {
        try connection.queue(
            "INSERT INTO inline_blobs (blob_id, bytes) VALUES ($1, $2)", [.text(id.rawValue), .bytes(bytes)])
    }

    public mutating func deleteInlineBlob(_ id: BlobID) throws {
        try connection.queue("DELETE FROM inline_blobs WHERE blob_id = $1", [.text(id.rawValue)])
    }

    public mutating func blobIsReferenced(_ id: BlobID) throws -> Bool {
        try connection.query(PostgresMetadataStore.blobReferenced, [.text(id.rawValue)]).first { try $0.bool(0) }
            ?? false
    }

    public mutating func deleteAllButDocuments(garbageAt time: Timestamp) throws {
        // EXCLUSIVE lets reads continue and makes concurrent writers wait until the reset has committed.
        try connection.execute(
            "LOCK TABLE buckets, objects, sessions, blob_garbage, soft_deleted_objects, soft_deleted_buckets, bucket_usage IN EXCLUSIVE MODE"
        )
        for table in ["objects", "sessions", "soft_deleted_objects"] {
            try connection.query(
                "INSERT INTO blob_garbage (blob_id, registered) SELECT blob_id, $1 FROM \(table) ON CONFLICT DO NOTHING",
                [.int64(time.microseconds)])
        }
        try connection.execute(
            """
            DELETE FROM soft_deleted_objects; DELETE FROM soft_deleted_buckets; DELETE FROM objects;
            DELETE FROM sessions; DELETE FROM buckets; DELETE FROM bucket_usage
            """)
    }

    // MARK: Documents

    /// Two statements: the row exists before it is locked, so two nodes creating the first document wait for each
    /// other instead of one failing on the primary key. An empty body is that placeholder: no document.
    public mutating func document(_ name: String) throws -> String? {
        try connection.query(
            "INSERT INTO documents (name, body) VALUES ($1, '') ON CONFLICT (name) DO NOTHING", [.text(name)])
        let stored = try connection.query("SELECT body FROM documents WHERE name = $1 FOR UPDATE", [.text(name)])
            .first { $0.text(0) }
        return stored.flatMap { $0.isEmpty ? nil : $0 }
    }

    public mutating func storeDocument(_ name: String, _ text: String?) throws {
        if let text {
            try connection.query("UPDATE documents SET body = $2 WHERE name = $1", [.text(name), .text(text)])
        } else {
            try connection.query("DELETE FROM documents WHERE name = $1", [.text(name)])
        }
    }

    // MARK: Event outbox and usage

    public mutating func appendEvent(_ event: StorageEvent) throws {
        try connection.queue(
            "INSERT INTO event_outbox (kind, object, time, due) VALUES ($1, $2, $3, $3)",
            [.text(event.kind.rawValue), .text(try Codec.json(event.object)), .int64(event.time.microseconds)])
    }

    /// One statement. SKIP LOCKED: rows another node is claiming right now are left to it, and once it commits
    /// their lease keeps them out of every other claim until it runs out.
    public mutating func claimEvents(owner: String, now: Timestamp, leaseUntil: Timestamp, limit: Int) throws
        -> [OutboxEvent]
    {
        try connection.query(
            """
            UPDATE event_outbox SET lease_owner = $1, lease_until = $2 WHERE sequence IN (
                SELECT sequence FROM event_outbox WHERE due <= $3 AND (lease_until IS NULL OR lease_until <= $3)
                ORDER BY sequence LIMIT $4 FOR UPDATE SKIP LOCKED
            ) RETURNING sequence, kind, object, time, attempts
            """,
            [.text(owner), .int64(leaseUntil.microseconds), .int64(now.microseconds), .int64(Int64(limit))]
        ).map(Codec.outboxEvent).sorted { $0.sequence < $1.sequence }
    }

    public mutating func deleteEvent(_ sequence: Int64) throws {
        try connection.query("DELETE FROM event_outbox WHERE sequence = $1", [.int64(sequence)])
    }

    public mutating func releaseEvent(_ sequence: Int64, owner: String, retryAt: Timestamp) throws {
        try connection.query(
            """
            UPDATE event_outbox SET attempts = attempts + 1, due = $1, lease_owner = NULL, lease_until = NULL
            WHERE sequence = $2 AND lease_owner = $3
            """, [.int64(retryAt.microseconds), .int64(sequence), .text(owner)])
    }

    public mutating func outboxStatus() throws -> OutboxStatus {
        try connection.query("SELECT count(*), min(time) FROM event_outbox").first {
            OutboxStatus(
                pending: Int(try $0.int64(0)), oldest: try $0.optionalInt64(1).map(Timestamp.init(microseconds:)))
        } ?? OutboxStatus(pending: 0, oldest: nil)
    }

    public mutating func addUsage(_ bucket: BucketName, _ delta: BucketUsage) throws {
        try connection.queue(
            """
            INSERT INTO bucket_usage AS u (bucket, stripe, objects, bytes, noncurrent_objects, noncurrent_bytes)
            VALUES ($1, pg_backend_pid() % \(GenerationStripes.count), $2, $3, $4, $5)
            ON CONFLICT (bucket, stripe) DO UPDATE SET objects = u.objects + $2, bytes = u.bytes + $3,
                noncurrent_objects = u.noncurrent_objects + $4, noncurrent_bytes = u.noncurrent_bytes + $5
            """,
            [
                .text(bucket.rawValue), .int64(delta.objects), .int64(delta.bytes), .int64(delta.noncurrentObjects),
                .int64(delta.noncurrentBytes),
            ])
    }

    public mutating func bucketUsage() throws -> [BucketName: BucketUsage] {
        let pairs = try connection.query(
            """
            SELECT b.name, coalesce(sum(u.objects), 0)::bigint, coalesce(sum(u.bytes), 0)::bigint,
                coalesce(sum(u.noncurrent_objects), 0)::bigint, coalesce(sum(u.noncurrent_bytes), 0)::bigint
            FROM buckets b LEFT JOIN bucket_usage u ON u.bucket = b.name GROUP BY b.name
            """
        ).map { row in
            (
                try BucketName(row.text(0)),
                BucketUsage(
                    objects: try row.int64(1), bytes: try row.int64(2), noncurrentObjects: try row.int64(3),
                    noncurrentBytes: try row.int64(4))
            )
        }
        return Dictionary(pairs, uniquingKeysWith: { a, _ in a })
    }
}
