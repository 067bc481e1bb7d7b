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
/// Its writes are ``TransactionalMetadataStore``'s, over ``PostgresMetadataRows``.
public final class PostgresMetadataStore: TransactionalMetadataStore {
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
        /// Whether object writes append storage events to the outbox (``TransactionalMetadataStore/recordsEvents``).
        public var recordsEvents = false
        /// Where the writer lease says when this node becomes or stops being the only writer.
        public var logger = Logger.disabled
        public var writerLeaseTiming = WriterLeaseTiming()
        /// The largest blob kept in the database itself, written in its version's own transaction: a small upload
        /// then costs no round trip to the S3 store (docs/architecture-notes.md, "Small objects inline").
        public var inlineBlobLimit = 4096

        public init() {}
    }

    public static let defaultPoolSize = 8

    private let configuration: Configuration
    private let pool: ConnectionPool
    /// Whether this node writes the database alone (``startWriterLease(notifying:)``); until started it never does,
    /// and its transactions take the lease shared.
    private let lease: WriterLease
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
        let connect: @Sendable () throws -> Connection = {
            let connection = try Connection(conninfo: conninfo, trace: trace)
            if let schema {
                try connection.query("SELECT set_config('search_path', $1, false)", [.text(schema.quoted)])
            }
            return connection
        }
        pool = ConnectionPool(capacity: capacity, checkoutTimeout: configuration.checkoutTimeout, connect: connect)
        lease = try WriterLease(
            namespace: nameLockNamespace, timing: configuration.writerLeaseTiming, logger: configuration.logger,
            connect: connect)
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
    public func close() {
        lease.stop()
        pool.close()
    }

    /// Takes part in the database's writer lease (``WriterLease``): `observer` — the cache in front of this store —
    /// is told when this node becomes, stays and stops being the only writer. Returns once this node holds the
    /// lease, exclusively (it runs alone) or shared (after the node that ran alone handed over); throws if neither
    /// happens.
    public func startWriterLease(notifying observer: any SoleWriterObserver) throws {
        try lease.start(observer)
    }

    /// Whether this node is the database's only writer now (for tests and diagnostics).
    public var isSoleWriter: Bool { lease.isOwner }

    deinit { close() }

    // MARK: Access

    /// Runs `body` on a pooled connection outside a transaction (each statement commits on its own).
    private func read<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        try Self.withRetries(pool: pool, maxAttempts: configuration.maxAttempts, body)
    }

    /// Runs `body` in one transaction, again from the start if it fails in a way a rerun can fix.
    ///
    /// A node that does not own the writer lease takes it shared for the transaction, in BEGIN's round trip; if
    /// another node owns it (and caches), it asks that node to hand over and waits.
    public func transaction<Result>(_ body: (inout PostgresMetadataRows) throws -> Result) throws -> Result {
        let admission = lease.admission()
        do {
            return try transaction(prologue: admission.sql, admitted: admission.admitted, body)
        } catch is OwnedElsewhere {
            _ = try read { try $0.execute(lease.handoverRequest) }
            return try transaction(prologue: lease.waitingAdmission, admitted: nil, body)
        }
    }

    /// The writer lease is held exclusively by another node: ``transaction(_:)`` asks it to hand over.
    private struct OwnedElsewhere: Error {}

    /// `admitted`: the prologue's answer that lets the transaction go on (nil: any).
    private func transaction<Result>(
        prologue: String, admitted: String?, _ body: (inout PostgresMetadataRows) throws -> Result
    ) throws -> Result {
        try Self.withRetries(pool: pool, maxAttempts: configuration.maxAttempts) { connection in
            var rows = PostgresMetadataRows(connection: connection, nameLockNamespace: nameLockNamespace)
            return try connection.transaction(prologue: prologue) { begun in
                if let admitted, begun.first({ $0.text(0) }) != admitted { throw OwnedElsewhere() }
                return try body(&rows)
            }
        }
    }

    public func currentTime() -> Timestamp { configuration.now() }

    public var recordsEvents: Bool { configuration.recordsEvents }

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

    // MARK: Statements the rows share

    static let selectBucket = "SELECT \(Codec.bucketColumns) FROM buckets WHERE name = $1"
    static let selectLive = "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = $1 AND name = $2 AND live"
    static let selectGeneration =
        "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = $1 AND name = $2 AND generation = $3"
    static let selectSession = "SELECT record FROM sessions WHERE id = $1"
    private static let softColumns = "\(Codec.objectColumns), soft_deleted, hard_delete"
    static let selectSoftDeleted =
        "SELECT \(softColumns) FROM soft_deleted_objects WHERE bucket = $1 AND name = $2 AND generation = $3"

    static func softDeleted(_ row: Row) throws -> SoftDeletedObject {
        SoftDeletedObject(
            record: try Codec.object(row),
            deletion: SoftDeletion(
                at: Timestamp(microseconds: try row.int64(20)),
                hardDeleteAt: Timestamp(microseconds: try row.int64(21))))
    }

    // MARK: Reads

    public func bucket(_ name: BucketName) throws -> BucketRecord? {
        try read { try $0.query(Self.selectBucket, [.text(name.rawValue)]).first(Codec.bucket) }
    }

    public func buckets() throws -> [BucketRecord] {
        try read { try $0.query("SELECT \(Codec.bucketColumns) FROM buckets ORDER BY name").map(Codec.bucket) }
    }

    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        let nameBytes = Value.bytes(Array(name.rawValue.utf8))
        return try read { connection in
            guard let generation else {
                return try connection.query(Self.selectLive, [.text(bucket.rawValue), nameBytes]).first(Codec.object)
            }
            return try connection.query(Self.selectGeneration, [.text(bucket.rawValue), nameBytes, .int64(generation)])
                .first(Codec.object)
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
        let range = VersionListingRange(prefix: prefix, startAfter: startAfter)
        return try read { connection in
            try connection.query(
                """
                SELECT \(columns) FROM \(table)
                WHERE bucket = $1 AND name >= $2 AND name < $3 AND (name, generation) > ($4, $5)
                ORDER BY name, generation LIMIT $6
                """,
                [
                    .text(bucket.rawValue), .bytes(range.lower), .bytes(range.upper), .bytes(range.after.name),
                    .int64(range.after.generation), .int64(Int64(limit)),
                ]
            ).map(decode)
        }
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
                Self.selectSoftDeleted, [.text(bucket.rawValue), .bytes(Array(name.rawValue.utf8)), .int64(generation)]
            ).first(Self.softDeleted)
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

    public func session(id: String) throws -> UploadSession? {
        try read { try $0.query(Self.selectSession, [.text(id)]).first(Codec.session) }
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

    public func document(_ name: String) throws -> String? {
        try read { try $0.query("SELECT body FROM documents WHERE name = $1", [.text(name)]).first { $0.text(0) } }
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

    public func activeSessionTotals() throws -> SessionUsage {
        try read { connection in
            try connection.query(
                "SELECT count(*), coalesce(sum(received), 0)::bigint FROM sessions WHERE state = 'active'", []
            ).first { SessionUsage(sessions: Int(try $0.int64(0)), bytes: try $0.int64(1)) }
                ?? SessionUsage(sessions: 0, bytes: 0)
        }
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
                    AND NOT EXISTS (SELECT 1 FROM soft_deleted_objects d WHERE d.blob_id = g.blob_id)
                ORDER BY g.registered, g.blob_id LIMIT $2
                """,
                [.int64(time.microseconds), .int64(Int64(limit))]
            ).map(Codec.blobID)
        }
    }

    public var inlineBlobLimit: Int { configuration.inlineBlobLimit }

    public func inlineBlob(_ id: BlobID) throws -> [UInt8]? {
        try read {
            try $0.query("SELECT bytes FROM inline_blobs WHERE blob_id = $1", [.text(id.rawValue)]).first {
                $0.bytes(0)
            }
        }
    }

    public func isBlobReferenced(_ id: BlobID) throws -> Bool {
        try read { try $0.query(Self.blobReferenced, [.text(id.rawValue)]).first { try $0.bool(0) } ?? false }
    }

    /// Whether anything points to the blob `$1`: an object version, an active session, a soft-deleted version.
    static let blobReferenced = """
        SELECT EXISTS (SELECT 1 FROM objects WHERE blob_id = $1)
            OR EXISTS (SELECT 1 FROM sessions WHERE blob_id = $1 AND state = 'active')
            OR EXISTS (SELECT 1 FROM soft_deleted_objects WHERE blob_id = $1)
        """

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
