internal import CSQLite3
internal import SiloCore

/// One `sqlite3*` handle, closed in deinit, with a cache of prepared statements.
///
/// Not Sendable: the store confines each connection to one thread at a time (the writer behind a lock, readers
/// checked out of a pool). Opened in multi-thread mode (NOMUTEX) because of that confinement.
final class Connection {
    private var handle: OpaquePointer?
    let path: String
    private var statements: [String: Statement] = [:]
    /// Kept alive while registered with sqlite3_trace_v2 (see `init`).
    private var traceHook: TraceHook?

    init(path: String, readOnly: Bool, busyTimeoutMilliseconds: Int32, trace: (@Sendable (String) -> Void)?) throws {
        self.path = path
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let error = SQLiteError(db, result: rc).storageError("opening \(path)")
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        if let trace {
            let hook = TraceHook(trace)
            traceHook = hook
            // passUnretained: this connection owns the hook and unregisters the callback in close() before
            // releasing it, so the pointer SQLite holds never outlives the object.
            sqlite3_trace_v2(db, UInt32(SQLITE_TRACE_STMT), traceCallback, Unmanaged.passUnretained(hook).toOpaque())
        }
    }

    deinit { close() }

    /// Finalizes the cached statements and closes the handle; idempotent.
    func close() {
        guard let db = handle else { return }
        statements = [:]
        assert(busyStatementCount() == 0, "closing \(path) with a statement still running")
        if traceHook != nil { sqlite3_trace_v2(db, 0, nil, nil) }
        traceHook = nil
        sqlite3_close_v2(db)
        handle = nil
    }

    var isOpen: Bool { handle != nil }

    /// Statements of this connection that have started and not been reset (the test harness checks for leaks).
    func busyStatementCount() -> Int {
        guard let db = handle else { return 0 }
        var count = 0
        var statement = sqlite3_next_stmt(db, nil)
        while let current = statement {
            if sqlite3_stmt_busy(current) != 0 { count += 1 }
            statement = sqlite3_next_stmt(db, current)
        }
        return count
    }

    private func db() throws -> OpaquePointer {
        guard let handle else { throw StorageError(.unavailable, "the metadata database \(path) is closed") }
        return handle
    }

    /// Runs SQL text that may hold several statements and no parameters (schema, pragmas).
    func execute(_ sql: String) throws {
        let db = try db()
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? ""
            sqlite3_free(message)
            throw SQLiteError(extendedCode: sqlite3_extended_errcode(db), message: text, sql: sql).storageError(
                "executing SQL")
        }
    }

    private func statement(_ sql: String) throws -> Statement {
        if let cached = statements[sql] { return cached }
        let statement = try Statement(db: try db(), sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Bytes of the values bound to statements run with ``run(_:_:)`` (the writes) since the connection opened: what
    /// a commit group's byte bound counts (``GroupCommitWriter/Bounds``).
    private(set) var boundBytes = 0

    /// Runs a statement to completion.
    func run(_ sql: String, _ values: [SQLValue] = []) throws {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        for value in values { boundBytes += value.byteCount }
        while try statement.step() {}
    }

    /// Runs a query and decodes every row.
    func rows<Row>(_ sql: String, _ values: [SQLValue] = [], _ decode: (Statement) throws -> Row) throws -> [Row] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var rows: [Row] = []
        while try statement.step() { rows.append(try decode(statement)) }
        return rows
    }

    /// Runs a query and decodes its first row, if any.
    func row<Row>(_ sql: String, _ values: [SQLValue] = [], _ decode: (Statement) throws -> Row) throws -> Row? {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        return try statement.step() ? decode(statement) : nil
    }

    /// Whether a transaction is open (SQLite rolls one back by itself after some errors: SQLITE_FULL, I/O errors).
    var inTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Number of rows the last INSERT/UPDATE/DELETE changed.
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// Runs `body` in one write transaction (BEGIN IMMEDIATE takes the write lock up front, so a transaction that
    /// reads before it writes cannot fail half-way with SQLITE_BUSY); rolls back if it throws.
    func transaction<Result>(_ body: () throws -> Result) throws -> Result {
        try run("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            // A failed COMMIT may already have rolled back; ROLLBACK then reports "no transaction", which is fine.
            try? run("ROLLBACK")
            throw error
        }
    }
}

@available(*, unavailable) extension Connection: Sendable {}

/// The trace callback's context: the closure to call with each statement's SQL text.
private final class TraceHook {
    let record: @Sendable (String) -> Void
    init(_ record: @escaping @Sendable (String) -> Void) { self.record = record }
}

/// For SQLITE_TRACE_STMT, `x` is the statement's SQL text as written (bound values are not expanded, which keeps
/// user data out of traces).
private let traceCallback:
    @convention(c) (UInt32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)
        -> Int32 = { event, context, _, x in
            guard event == UInt32(SQLITE_TRACE_STMT), let context, let x else { return 0 }
            let hook = Unmanaged<TraceHook>.fromOpaque(context).takeUnretainedValue()
            hook.record(String(cString: x.assumingMemoryBound(to: CChar.self)))
            return 0
        }
