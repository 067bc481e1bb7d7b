public import SiloCore
internal import SiloWire

/// A ``MetadataStore`` in one SQLite file (`<data>/metadata.sqlite`), in WAL mode.
///
/// One writer connection runs the writes one at a time, each in its own savepoint of a `BEGIN IMMEDIATE`
/// transaction, so preconditions and generation assignment see a stable state; writes that are ready together share
/// one `COMMIT` and its WAL fsync (group commit, ``GroupCommitWriter``), and each returns only after it. A pool of
/// reader connections serves lookups and listings beside it.
///
/// Waiting for the writer sleeps (pthread condition variables), never spins: waiters spinning through another
/// thread's fsync burn the cores that thread needs (docs/architecture-notes.md has the measurement).
///
/// Its writes are ``TransactionalMetadataStore``'s, over ``SQLiteMetadataRows``.
public final class SQLiteMetadataStore: TransactionalMetadataStore, MetricsSource {
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
        /// How large a commit group may grow: at most this many transactions, and this many bytes of written row
        /// values, share one `COMMIT` (docs/architecture-notes.md, "Group commit").
        public var maxGroupTransactions = 64
        public var maxGroupBytes = 1 << 20
        /// The largest blob kept in the database itself, written in its version's own transaction: a small upload
        /// is then one row in one (grouped) commit, with no file, no file fsync and no directory fsync, and it costs
        /// about its own size on disk instead of a file system block and an inode. One 4 KiB page: larger rows spill
        /// into overflow pages, where a file costs no more (docs/architecture-notes.md, "Small objects inline").
        public var inlineBlobLimit = 4096

        public init() {}
    }

    public let path: String
    private let configuration: Configuration
    private let writer: GroupCommitWriter
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
        // The counter alone: every generation a row holds was written to it in the row's own transaction
        // (``SQLiteMetadataRows/nextGeneration(for:_:at:)``). `max(generation)` over the objects, which it was once
        // checked against, has no index to use and read the whole table: 3.1 s before a 10⁷-object store answered.
        let lastGeneration =
            try connection.row("SELECT value FROM counters WHERE name = 'last_generation'") { $0.int64(0) } ?? 0
        writer = GroupCommitWriter(
            connection: connection, lastGeneration: lastGeneration,
            bounds: .init(members: configuration.maxGroupTransactions, bytes: configuration.maxGroupBytes))
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
        writer.withConnection { $0.close() }
        processLock?.release()
    }

    deinit { close() }

    // MARK: Access

    private func read<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        try readers.read(body)
    }

    /// Runs `body` on the writer connection, in a savepoint of its own inside a `BEGIN IMMEDIATE` transaction that
    /// the writes ready at the same time share; returns (or throws what `body` threw, its changes rolled back) only
    /// after that transaction's `COMMIT` returned.
    public func transaction<Result>(_ body: (inout SQLiteMetadataRows) throws -> Result) throws -> Result {
        try writer.transaction(body)
    }

    /// Committed transactions, and the `COMMIT`s (durability steps) that covered them.
    public var commitCounts: (commits: UInt64, groups: UInt64) {
        let counts = writer.counts
        return (counts.commits, counts.groups)
    }

    public func collect(into text: inout MetricsText) {
        let counts = writer.counts
        text.family(
            "silo_metadata_commits_total", .counter, help: "Write transactions committed by the metadata store.")
        text.sample("silo_metadata_commits_total", counts.commits)
        text.family(
            "silo_metadata_commit_groups_total", .counter,
            help: "Durability steps (one COMMIT and WAL fsync each) that covered those commits (group commit).")
        text.sample("silo_metadata_commit_groups_total", counts.groups)
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
        let prefixBytes = Array(prefix.utf8)
        let upper = ObjectName.keyAfterAllNames(startingWith: prefixBytes)
        // One lower bound, the larger one (as VersionListingRange does): given the prefix and the cursor as two
        // parameters, SQLite seeks by one of them and filters by the other row by row, so a page deep into a large
        // prefix walked every name before it.
        let (comparison, lower) =
            if let startAfter, !startAfter.lexicographicallyPrecedes(prefixBytes) {
                (">", startAfter)
            } else {
                (">=", prefixBytes)
            }
        return try read { connection in
            try connection.rows(
                """
                SELECT \(Codec.objectColumns) FROM objects
                WHERE bucket = ? AND live = 1 AND name \(comparison) ? AND name < ?
                ORDER BY name LIMIT ?
                """,
                [.text(bucket.rawValue), .blob(lower), .blob(upper), .integer(Int64(limit))],
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

    public var inlineBlobLimit: Int { configuration.inlineBlobLimit }

    public func inlineBlob(_ id: BlobID) throws -> [UInt8]? {
        try read { try $0.row("SELECT bytes FROM inline_blobs WHERE blob_id = ?", [.text(id.rawValue)]) { $0.blob(0) } }
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
        try writer.withConnection { try $0.execute(sql) }
    }

    /// Statements left running on the writer connection; must be 0 between calls.
    @_spi(Testing) public func busyStatementCount() -> Int {
        writer.withConnection { $0.busyStatementCount() }
    }

    /// Threads waiting for the writer connection now: a test lets a group go once the queue it wants has formed.
    @_spi(Testing) public var queuedWriters: Int { writer.queued }
}
