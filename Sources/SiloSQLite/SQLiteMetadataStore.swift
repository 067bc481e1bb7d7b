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
///
/// Its writes are ``TransactionalMetadataStore``'s, over ``SQLiteMetadataRows``.
public final class SQLiteMetadataStore: TransactionalMetadataStore {
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
        /// Whether object writes append storage events to the outbox (``TransactionalMetadataStore/recordsEvents``).
        public var recordsEvents = false

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

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the writer connection.
    public func transaction<Result>(_ body: (inout SQLiteMetadataRows) throws -> Result) throws -> Result {
        try writer.withLock { writer in
            var rows = SQLiteMetadataRows(connection: writer.connection, lastGeneration: writer.lastGeneration)
            let result = try writer.connection.transaction { try body(&rows) }
            // Only a committed transaction moves the counter on.
            writer.lastGeneration = rows.lastGeneration
            return result
        }
    }

    public func currentTime() -> Timestamp { configuration.now() }

    public var recordsEvents: Bool { configuration.recordsEvents }

    // MARK: Statements the rows share

    static let selectBucket = "SELECT \(Codec.bucketColumns) FROM buckets WHERE name = ?"
    static let selectLive = "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = ? AND name = ? AND live = 1"
    static let selectGeneration =
        "SELECT \(Codec.objectColumns) FROM objects WHERE bucket = ? AND name = ? AND generation = ?"
    static let selectSession = "SELECT record FROM sessions WHERE id = ?"
    private static let softColumns = "\(Codec.objectColumns), soft_deleted, hard_delete"
    static let selectSoftDeleted =
        "SELECT \(softColumns) FROM soft_deleted_objects WHERE bucket = ? AND name = ? AND generation = ?"

    static func softDeleted(_ row: Statement) throws -> SoftDeletedObject {
        SoftDeletedObject(
            record: try Codec.object(row),
            deletion: SoftDeletion(
                at: Timestamp(microseconds: row.int64(20)), hardDeleteAt: Timestamp(microseconds: row.int64(21))))
    }

    // MARK: Reads

    public func bucket(_ name: BucketName) throws -> BucketRecord? {
        try read { try $0.row(Self.selectBucket, [.text(name.rawValue)], Codec.bucket) }
    }

    public func buckets() throws -> [BucketRecord] {
        try read { try $0.rows("SELECT \(Codec.bucketColumns) FROM buckets ORDER BY name", [], Codec.bucket) }
    }

    public func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        let nameBytes = SQLValue.blob(Array(name.rawValue.utf8))
        return try read { connection in
            guard let generation else {
                return try connection.row(Self.selectLive, [.text(bucket.rawValue), nameBytes], Codec.object)
            }
            return try connection.row(
                Self.selectGeneration, [.text(bucket.rawValue), nameBytes, .integer(generation)], Codec.object)
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
            try connection.row(
                Self.selectSoftDeleted,
                [.text(bucket.rawValue), .blob(Array(name.rawValue.utf8)), .integer(generation)], Self.softDeleted)
        }
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
        let range = VersionListingRange(prefix: prefix, startAfter: startAfter)
        return try read { connection in
            try connection.rows(
                """
                SELECT \(columns) FROM \(table)
                WHERE bucket = ? AND name >= ? AND name < ? AND (name > ? OR (name = ? AND generation > ?))
                ORDER BY name, generation LIMIT ?
                """,
                [
                    .text(bucket.rawValue), .blob(range.lower), .blob(range.upper), .blob(range.after.name),
                    .blob(range.after.name), .integer(range.after.generation), .integer(Int64(limit)),
                ],
                decode)
        }
    }

    public func session(id: String) throws -> UploadSession? {
        try read { try $0.row(Self.selectSession, [.text(id)]) { try Codec.session($0.text(0)) } }
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

    public func activeSessionTotals() throws -> SessionUsage {
        try read { connection in
            try connection.row(
                "SELECT count(*), coalesce(sum(received), 0) FROM sessions WHERE state = 'active'", []
            ) { SessionUsage(sessions: Int($0.int64(0)), bytes: $0.int64(1)) } ?? SessionUsage(sessions: 0, bytes: 0)
        }
    }

    public func document(_ name: String) throws -> String? {
        try read { try $0.row("SELECT body FROM documents WHERE name = ?", [.text(name)]) { $0.text(0) } }
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
                    AND NOT EXISTS (SELECT 1 FROM soft_deleted_objects d WHERE d.blob_id = g.blob_id)
                ORDER BY g.registered, g.blob_id LIMIT ?
                """,
                [.integer(time.microseconds), .integer(Int64(limit))]
            ) { row in
                guard let id = BlobID(rawValue: row.text(0)) else { throw StorageErrorFactory.corruptRow("blob id") }
                return id
            }
        }
    }

    public func isBlobReferenced(_ id: BlobID) throws -> Bool {
        try read { try $0.row(Self.blobReferenced, [.text(id.rawValue)]) { $0.int64(0) != 0 } ?? false }
    }

    /// Whether anything points to the blob `?1`: an object version, an active session, a soft-deleted version.
    static let blobReferenced = """
        SELECT EXISTS (SELECT 1 FROM objects WHERE blob_id = ?1)
            OR EXISTS (SELECT 1 FROM sessions WHERE blob_id = ?1 AND state = 'active')
            OR EXISTS (SELECT 1 FROM soft_deleted_objects WHERE blob_id = ?1)
        """

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
