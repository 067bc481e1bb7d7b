/// The schema as an append-only list of steps; `PRAGMA user_version` records how many have been applied.
///
/// Never edit a released step: add a new one. All pending steps run in one transaction at open.
enum Migrations {
    static let steps: [String] = [
        // 1: the initial schema.
        """
        CREATE TABLE buckets (
            name TEXT PRIMARY KEY NOT NULL,
            time_created INTEGER NOT NULL,
            updated INTEGER NOT NULL,
            metageneration INTEGER NOT NULL,
            versioning INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;

        -- name is a BLOB of the UTF-8 bytes: comparisons are memcmp, which is GCS listing order, and raw byte
        -- bounds such as prefix || x'FF' work.
        CREATE TABLE objects (
            bucket TEXT NOT NULL REFERENCES buckets(name),
            name BLOB NOT NULL,
            generation INTEGER NOT NULL,
            metageneration INTEGER NOT NULL,
            live INTEGER NOT NULL,
            size INTEGER NOT NULL,
            md5 BLOB NOT NULL,
            crc32c INTEGER NOT NULL,
            blob_id TEXT NOT NULL,
            content_type TEXT,
            content_encoding TEXT,
            content_disposition TEXT,
            content_language TEXT,
            cache_control TEXT,
            custom_time INTEGER,
            custom_metadata TEXT NOT NULL,
            download_tokens TEXT NOT NULL,
            time_created INTEGER NOT NULL,
            updated INTEGER NOT NULL,
            component_count INTEGER,
            PRIMARY KEY (bucket, name, generation)
        ) WITHOUT ROWID;
        -- At most one live version per name, and the index live lookups and listings walk.
        CREATE UNIQUE INDEX objects_live ON objects(bucket, name) WHERE live = 1;
        CREATE INDEX objects_blob ON objects(blob_id);

        CREATE TABLE sessions (
            id TEXT PRIMARY KEY NOT NULL,
            blob_id TEXT NOT NULL,
            state TEXT NOT NULL,
            updated INTEGER NOT NULL,
            record TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX sessions_updated ON sessions(updated);
        CREATE INDEX sessions_blob ON sessions(blob_id);

        CREATE TABLE blob_garbage (
            blob_id TEXT PRIMARY KEY NOT NULL,
            registered INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX blob_garbage_registered ON blob_garbage(registered);

        -- The highest generation ever assigned, so generations never repeat after deletes or a reset.
        CREATE TABLE counters (
            name TEXT PRIMARY KEY NOT NULL,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO counters(name, value) VALUES ('last_generation', 0);
        """,
        // 2: per-caller upload quotas: who a session counts against, and how many bytes it holds.
        """
        ALTER TABLE sessions ADD COLUMN caller TEXT;
        ALTER TABLE sessions ADD COLUMN received INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX sessions_caller ON sessions(caller, updated) WHERE state = 'active';
        """,
        // 3: the whole GCS bucket resource and the bucket's generation.
        """
        ALTER TABLE buckets ADD COLUMN resource TEXT NOT NULL DEFAULT '{}';
        ALTER TABLE buckets ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
        UPDATE buckets SET generation = time_created;
        """,
        // 4: the object fields only the GCS API sets (storage class, holds, retention, contexts, ACL) as JSON.
        """
        ALTER TABLE objects ADD COLUMN extra TEXT NOT NULL DEFAULT '{}';
        """,
        // 5: soft-deleted versions (GCS soft delete): an object row as it was, with when it was deleted
        // and when it goes for good. Its blob is referenced until then.
        """
        CREATE TABLE soft_deleted_objects (
            bucket TEXT NOT NULL,
            name BLOB NOT NULL,
            generation INTEGER NOT NULL,
            metageneration INTEGER NOT NULL,
            size INTEGER NOT NULL,
            md5 BLOB NOT NULL,
            crc32c INTEGER NOT NULL,
            blob_id TEXT NOT NULL,
            content_type TEXT,
            content_encoding TEXT,
            content_disposition TEXT,
            content_language TEXT,
            cache_control TEXT,
            custom_time INTEGER,
            custom_metadata TEXT NOT NULL,
            download_tokens TEXT NOT NULL,
            time_created INTEGER NOT NULL,
            updated INTEGER NOT NULL,
            component_count INTEGER,
            extra TEXT NOT NULL,
            soft_deleted INTEGER NOT NULL,
            hard_delete INTEGER NOT NULL,
            PRIMARY KEY (bucket, name, generation)
        ) WITHOUT ROWID;
        CREATE INDEX soft_deleted_objects_blob ON soft_deleted_objects(blob_id);
        CREATE INDEX soft_deleted_objects_due ON soft_deleted_objects(hard_delete);
        CREATE TABLE soft_deleted_buckets (
            name TEXT NOT NULL,
            time_created INTEGER NOT NULL,
            updated INTEGER NOT NULL,
            metageneration INTEGER NOT NULL,
            versioning INTEGER NOT NULL,
            resource TEXT NOT NULL,
            generation INTEGER NOT NULL,
            soft_deleted INTEGER NOT NULL,
            hard_delete INTEGER NOT NULL,
            PRIMARY KEY (name, generation)
        ) WITHOUT ROWID;
        """,
        // 6: small named documents (the HMAC keys), each read and rewritten whole.
        """
        CREATE TABLE documents (name TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID;
        """,
        // 7: the storage-event outbox (AUTOINCREMENT: a sequence, which is the event's id, is never reused), and
        // per-bucket usage counted from the objects there are now; the writes keep it from here on.
        """
        CREATE TABLE event_outbox (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            object TEXT NOT NULL,
            time INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            due INTEGER NOT NULL,
            lease_owner TEXT,
            lease_until INTEGER
        );
        CREATE INDEX event_outbox_due ON event_outbox(due);
        CREATE TABLE bucket_usage (
            bucket TEXT PRIMARY KEY NOT NULL,
            objects INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            noncurrent_objects INTEGER NOT NULL,
            noncurrent_bytes INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO bucket_usage (bucket, objects, bytes, noncurrent_objects, noncurrent_bytes)
        SELECT bucket, sum(live), sum(CASE WHEN live = 1 THEN size ELSE 0 END), sum(1 - live),
            sum(CASE WHEN live = 0 THEN size ELSE 0 END)
        FROM objects GROUP BY bucket;
        """,
        // 8: when a collection claimed a blob on the garbage list for deletion (NULL until one does): from then on no
        // commit may take it (TransactionalMetadataStore.claimGarbageBlob).
        """
        ALTER TABLE blob_garbage ADD COLUMN collecting INTEGER;
        """,
        // 9: sessions keep who started them (`starter`, the verified principal), never the credential: the raw
        // Authorization header v0 sessions kept as `principal` goes. An active session that held one cannot be
        // finished as its starter any more, so it fails (410, as UploadSession.credentialDropped says), and the
        // collector takes its blob; finished ones just lose the header.
        """
        UPDATE sessions SET state = 'failed',
            record = json_set(record, '$.state', 'failed', '$.failureStatus', 410, '$.failureMessage',
                'This upload session was started by an older Silo that kept the caller''s credential; '
                || 'it cannot be finished. Start the upload again.')
        WHERE state = 'active' AND json_type(record, '$.principal') IS NOT NULL;
        UPDATE sessions SET record = json_remove(record, '$.principal')
        WHERE json_type(record, '$.principal') IS NOT NULL;
        """,
        // 10: the bytes of small objects, kept in the database and written in their version's own transaction
        // (BlobID.isInline; SQLiteMetadataStore.Configuration.inlineBlobLimit). A rowid table: rows go in in rowid
        // order and fill their pages, where a table keyed by the random blob id would split pages half full.
        """
        CREATE TABLE IF NOT EXISTS inline_blobs (
            blob_id TEXT PRIMARY KEY NOT NULL,
            bytes BLOB NOT NULL
        );
        """,
    ]

    static var currentVersion: Int { steps.count }

    /// Brings the database to `currentVersion`; refuses a database written by a newer Silo.
    static func migrate(_ connection: Connection) throws -> Int {
        try connection.transaction {
            let version = try connection.row("PRAGMA user_version") { Int($0.int64(0)) } ?? 0
            guard version <= currentVersion else {
                throw StorageErrorFactory.newerSchema(path: connection.path, found: version, known: currentVersion)
            }
            for step in steps[version...] { try connection.execute(step) }
            if version < currentVersion { try connection.execute("PRAGMA user_version = \(currentVersion)") }
            return version
        }
    }
}
