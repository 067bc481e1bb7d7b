internal import SiloCore

/// The schema as an append-only list of steps; the table `silo_migrations` records which have been applied.
///
/// Never edit a released step: add a new one. At open, all pending steps run in one transaction that first takes
/// a transaction-scoped advisory lock, so nodes starting at once migrate one after the other and the later ones
/// find nothing to do. Tables go into the first schema of the connection's `search_path`.
enum Migrations {
    static let steps: [String] = [
        // 1: the initial schema.
        """
        -- COLLATE "C": bucket names, blob ids and session ids sort by bytes whatever the database's locale.
        CREATE TABLE buckets (
            name text COLLATE "C" PRIMARY KEY,
            time_created bigint NOT NULL,
            updated bigint NOT NULL,
            metageneration bigint NOT NULL,
            versioning boolean NOT NULL DEFAULT false
        );

        -- name is bytea holding the UTF-8 bytes: comparisons are memcmp, which is GCS listing order, and raw byte
        -- bounds such as prefix || '\\xff' work.
        CREATE TABLE objects (
            bucket text COLLATE "C" NOT NULL REFERENCES buckets(name),
            name bytea NOT NULL,
            generation bigint NOT NULL,
            metageneration bigint NOT NULL,
            live boolean NOT NULL,
            size bigint NOT NULL,
            md5 bytea NOT NULL,
            crc32c bigint NOT NULL,
            blob_id text COLLATE "C" NOT NULL,
            content_type text,
            content_encoding text,
            content_disposition text,
            content_language text,
            cache_control text,
            custom_time bigint,
            custom_metadata text NOT NULL,
            download_tokens text NOT NULL,
            time_created bigint NOT NULL,
            updated bigint NOT NULL,
            component_count bigint,
            PRIMARY KEY (bucket, name, generation)
        );
        -- At most one live version per name, and the index live lookups and listings walk.
        CREATE UNIQUE INDEX objects_live ON objects (bucket, name) WHERE live;
        CREATE INDEX objects_blob ON objects (blob_id);

        CREATE TABLE sessions (
            id text COLLATE "C" PRIMARY KEY,
            blob_id text COLLATE "C" NOT NULL,
            state text NOT NULL,
            updated bigint NOT NULL,
            record text NOT NULL
        );
        CREATE INDEX sessions_updated ON sessions (updated, id);
        CREATE INDEX sessions_blob ON sessions (blob_id);

        CREATE TABLE blob_garbage (
            blob_id text COLLATE "C" PRIMARY KEY,
            registered bigint NOT NULL
        );
        CREATE INDEX blob_garbage_registered ON blob_garbage (registered, blob_id);

        -- The highest generation ever assigned, shared by every node: each insert moves it on in its own
        -- transaction, so generations never repeat and always grow, across nodes, deletes and resets.
        CREATE TABLE counters (
            name text COLLATE "C" PRIMARY KEY,
            value bigint NOT NULL
        );
        INSERT INTO counters (name, value) VALUES ('last_generation', 0);
        """,
        // 2: per-caller upload quotas: who a session counts against, and how many bytes it holds.
        """
        ALTER TABLE sessions ADD COLUMN caller text COLLATE "C";
        ALTER TABLE sessions ADD COLUMN received bigint NOT NULL DEFAULT 0;
        CREATE INDEX sessions_caller ON sessions (caller, updated) WHERE state = 'active';
        """,
        // 3: the whole GCS bucket resource and the bucket's generation.
        """
        ALTER TABLE buckets ADD COLUMN resource text NOT NULL DEFAULT '{}';
        ALTER TABLE buckets ADD COLUMN generation bigint NOT NULL DEFAULT 0;
        UPDATE buckets SET generation = time_created;
        """,
        // 4: the object fields only the GCS API sets (storage class, holds, retention, contexts, ACL) as JSON.
        """
        ALTER TABLE objects ADD COLUMN extra text NOT NULL DEFAULT '{}';
        """,
        // 5: soft-deleted versions (GCS soft delete): an object row as it was, with when it was deleted
        // and when it goes for good. Its blob is referenced until then.
        """
        CREATE TABLE soft_deleted_objects (LIKE objects);
        ALTER TABLE soft_deleted_objects DROP COLUMN live;
        ALTER TABLE soft_deleted_objects ADD COLUMN soft_deleted bigint NOT NULL;
        ALTER TABLE soft_deleted_objects ADD COLUMN hard_delete bigint NOT NULL;
        ALTER TABLE soft_deleted_objects ADD PRIMARY KEY (bucket, name, generation);
        CREATE INDEX soft_deleted_objects_blob ON soft_deleted_objects (blob_id);
        CREATE INDEX soft_deleted_objects_due ON soft_deleted_objects (hard_delete);
        CREATE TABLE soft_deleted_buckets (LIKE buckets);
        ALTER TABLE soft_deleted_buckets ADD COLUMN soft_deleted bigint NOT NULL;
        ALTER TABLE soft_deleted_buckets ADD COLUMN hard_delete bigint NOT NULL;
        ALTER TABLE soft_deleted_buckets ADD PRIMARY KEY (name, generation);
        """,
        // small named documents (the HMAC keys), each read and rewritten whole.
        """
        CREATE TABLE documents (name text COLLATE "C" PRIMARY KEY, body text NOT NULL);
        """,
        // the storage-event outbox (the sequence is the event's id; a sequence never hands a number out twice),
        // and per-bucket usage counted from the objects there are now; the writes keep it from here on.
        """
        CREATE TABLE event_outbox (
            sequence bigserial PRIMARY KEY,
            kind text NOT NULL,
            object text NOT NULL,
            time bigint NOT NULL,
            attempts bigint NOT NULL DEFAULT 0,
            due bigint NOT NULL,
            lease_owner text,
            lease_until bigint
        );
        CREATE INDEX event_outbox_due ON event_outbox (due);
        CREATE TABLE bucket_usage (
            bucket text COLLATE "C" PRIMARY KEY,
            objects bigint NOT NULL,
            bytes bigint NOT NULL,
            noncurrent_objects bigint NOT NULL,
            noncurrent_bytes bigint NOT NULL
        );
        INSERT INTO bucket_usage (bucket, objects, bytes, noncurrent_objects, noncurrent_bytes)
        SELECT bucket, count(*) FILTER (WHERE live), coalesce(sum(size) FILTER (WHERE live), 0),
            count(*) FILTER (WHERE NOT live), coalesce(sum(size) FILTER (WHERE NOT live), 0)
        FROM objects GROUP BY bucket;
        """,
        // 8: the writer lease's fencing epoch, moved on by each node that becomes the only writer (WriterLease).
        """
        INSERT INTO counters (name, value) VALUES ('writer_lease_epoch', 0);
        """,
        // 9: when a collection claimed a blob on the garbage list for deletion (NULL until one does): from then on no
        // commit may take it (TransactionalMetadataStore.claimGarbageBlob).
        """
        ALTER TABLE blob_garbage ADD COLUMN collecting bigint;
        """,
        // 10: sessions keep who started them (`starter`, the verified principal), never the credential: the raw
        // Authorization header v0 sessions kept as `principal` goes. An active session that held one cannot be
        // finished as its starter any more, so it fails (410, as UploadSession.credentialDropped says), and the
        // collector takes its blob; finished ones just lose the header.
        """
        UPDATE sessions SET state = 'failed',
            record = (record::jsonb || jsonb_build_object('state', 'failed', 'failureStatus', 410,
                'failureMessage', 'This upload session was started by an older Silo that kept the caller''s credential; '
                || 'it cannot be finished. Start the upload again.'))::text
        WHERE state = 'active' AND record::jsonb ? 'principal';
        UPDATE sessions SET record = (record::jsonb - 'principal')::text WHERE record::jsonb ? 'principal';
        """,
        // 11: generations come from one counter row per stripe of names (GenerationStripes), each starting where the
        // single row stood, and usage from one row per bucket and stripe of connections: one row for all made
        // every write of every node wait on its lock. The single row goes, so that a node of an older version,
        // which would hand out generations from it, fails its writes instead of reusing a number.
        """
        INSERT INTO counters (name, value)
        SELECT 'generation/' || s, c.value FROM counters c, generate_series(0, 15) AS s WHERE c.name = 'last_generation'
        ON CONFLICT (name) DO NOTHING;
        DELETE FROM counters WHERE name = 'last_generation';
        ALTER TABLE bucket_usage ADD COLUMN IF NOT EXISTS stripe smallint NOT NULL DEFAULT 0;
        ALTER TABLE bucket_usage DROP CONSTRAINT IF EXISTS bucket_usage_pkey;
        ALTER TABLE bucket_usage ADD PRIMARY KEY (bucket, stripe);
        """,
        // 12: the bytes of small objects, kept in the database and written in their version's own transaction
        // (BlobID.isInline; PostgresMetadataStore.Configuration.inlineBlobLimit): a small upload costs no round trip
        // to the S3 store. STORAGE MAIN keeps them in the row rather than in TOAST where they fit.
        """
        CREATE TABLE IF NOT EXISTS inline_blobs (
            blob_id text COLLATE "C" PRIMARY KEY,
            bytes bytea NOT NULL
        );
        ALTER TABLE inline_blobs ALTER COLUMN bytes SET STORAGE MAIN;
        """,
    ]

    static var currentVersion: Int { steps.count }

    /// The two-key advisory lock that serializes migrations: ('SILO', 1). Object writes lock names with the
    /// one-key form, whose key space PostgreSQL keeps apart from this one.
    static let lockSQL = "SELECT pg_advisory_xact_lock(1397312591, 1)"

    /// Brings the database to `currentVersion`; refuses a database written by a newer Silo. Returns the version
    /// found before migrating (0 for an empty database).
    static func migrate(_ connection: Connection, creatingSchema schema: SchemaName?) throws -> Int64 {
        try connection.transaction { _ in
            try connection.execute(lockSQL)
            if let schema { try connection.execute("CREATE SCHEMA IF NOT EXISTS \(schema.quoted)") }
            // to_regclass instead of CREATE TABLE IF NOT EXISTS: the latter sends a NOTICE every start.
            let exists = try connection.query("SELECT to_regclass('silo_migrations') IS NOT NULL").first {
                try $0.bool(0)
            }
            if exists != true {
                try connection.execute(
                    "CREATE TABLE silo_migrations (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL)")
            }
            let version =
                try connection.query("SELECT coalesce(max(version), 0) FROM silo_migrations").first {
                    try $0.int64(0)
                } ?? 0
            guard version <= currentVersion else {
                throw StorageErrorFactory.newerSchema(found: version, known: currentVersion)
            }
            for (index, step) in steps.enumerated() where index >= version {
                try connection.execute(step)
                try connection.query(
                    "INSERT INTO silo_migrations (version, applied_at) VALUES ($1, now())", [.int64(Int64(index + 1))])
            }
            return version
        }
    }
}
