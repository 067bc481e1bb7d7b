internal import CLibPQ
internal import SiloCore

/// One `PGconn*`, finished in deinit.
///
/// Not Sendable: the pool confines each connection to one thread at a time (checked out, used, checked back in
/// through a Mutex). libpq allows that: a connection may move between threads as long as two never use it at once.
final class Connection {
    private var handle: OpaquePointer?
    /// Called with the SQL text of every statement run (bound values are not included).
    private let trace: (@Sendable (String) -> Void)?
    /// Statements prepared on this connection, by text and parameter types (see ``PreparedStatements``).
    private var prepared = PreparedStatements()
    /// Writes whose results nobody reads (``queue(_:_:)``), not sent yet: they go to the server in one pipeline
    /// with the next statement whose result is read, or with COMMIT.
    private var queued: [(sql: String, parameters: [Value])] = []
    /// The bytes of the queued statements' parameters: past ``maxQueuedBytes`` the queue is sent on its own.
    private var queuedBytes = 0
    /// A bound on one pipeline's request bytes, well under a socket's buffers: libpq in blocking mode could
    /// otherwise wait to send while the server waits for the results it has written to be read.
    static let maxQueuedBytes = 256 << 10

    /// Connects with a libpq connection string or `postgres://` URI. Errors never repeat `conninfo` (it may hold a
    /// password).
    init(conninfo: String, trace: (@Sendable (String) -> Void)?) throws {
        self.trace = trace
        let connection = PQconnectdb(conninfo)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = connection.map { Self.errorText(PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(connection)
            throw PostgresError(sqlState: nil, message: message).storageError("connecting to PostgreSQL")
        }
        handle = connection
        // The default receiver prints NOTICEs (`CREATE SCHEMA IF NOT EXISTS` on an existing schema, …) to stderr;
        // a library has no business writing there.
        PQsetNoticeReceiver(connection, { _, _ in }, nil)
        // Text parameters and results are UTF-8 whatever the server's default client encoding is.
        guard PQsetClientEncoding(connection, "UTF8") == 0 else {
            let message = Self.errorText(PQerrorMessage(connection))
            throw PostgresError(sqlState: nil, message: message).storageError("setting client_encoding")
        }
    }

    deinit { close() }

    /// Closes the socket; idempotent.
    func close() {
        guard let connection = handle else { return }
        PQfinish(connection)
        handle = nil
    }

    /// Open, not broken, and outside any transaction: safe to hand to the next caller.
    var isReusable: Bool {
        guard let connection = handle else { return false }
        return PQstatus(connection) == CONNECTION_OK && PQtransactionStatus(connection) == PQTRANS_IDLE
            && queued.isEmpty && PQpipelineStatus(connection) == PQ_PIPELINE_OFF
    }

    /// The server process serving this connection (tests use it to tell connections apart and to kill one).
    var backendPID: Int32 {
        handle.map { PQbackendPID($0) } ?? 0
    }

    // MARK: Running statements

    /// Runs one parameterized statement and returns its rows, every column in binary format.
    /// Queued writes (``queue(_:_:)``) go first, in the same round trip.
    @discardableResult
    func query(_ sql: String, _ parameters: [Value] = []) throws -> QueryResult {
        guard let connection = handle else {
            throw PostgresError(sqlState: nil, message: "connection is closed", sql: sql).storageError("running SQL")
        }
        if !queued.isEmpty {
            queued.append((sql, parameters))
            return try sendQueued(connection)
        }
        trace?(sql)
        return try Self.withParameters(parameters) { count, types, values, lengths, formats in
            let binaryResults: Int32 = 1
            if let name = preparedName(connection, sql, types) {
                let result = PQexecPrepared(connection, name, count, values, lengths, formats, binaryResults)
                // Gone from the session (a pooler in front of the server, a DEALLOCATE): forget it and run the
                // statement unnamed. Outside a transaction, so the failed attempt aborted nothing.
                guard let result, Self.sqlState(result) == "26000" else { return try checked(result, sql: sql) }
                PQclear(result)
                prepared.forget(sql, types)
            }
            let result = PQexecParams(connection, sql, count, types, values, lengths, formats, binaryResults)
            return try checked(result, sql: sql)
        }
    }

    /// A write inside a transaction whose result nobody reads (an INSERT, an UPDATE of a counter): it is sent with
    /// the next statement whose result is read, or with COMMIT, in one pipeline (libpq's pipeline mode), so a
    /// transaction's trailing writes cost one round trip instead of one each. The server runs them in order, so
    /// what a later statement reads sees them; an error in one fails the statement that sent it, and the
    /// transaction, as it would have failed at its own turn.
    func queue(_ sql: String, _ parameters: [Value] = []) throws {
        queued.append((sql, parameters))
        queuedBytes += sql.utf8.count + parameters.reduce(0) { $0 + $1.encodedByteCount }
        if queuedBytes > Self.maxQueuedBytes, let connection = handle { _ = try sendQueued(connection) }
    }

    /// Sends the queue in one pipeline and returns the last statement's result; throws the first failure. Each
    /// statement's parameters are bound as ``query(_:_:)`` binds them, unnamed (inside a transaction nothing is
    /// prepared: a failed preparation would abort it).
    private func sendQueued(_ connection: OpaquePointer) throws -> QueryResult {
        let statements = queued
        queued.removeAll(keepingCapacity: true)
        queuedBytes = 0
        guard PQenterPipelineMode(connection) == 1 else {
            throw PostgresError(sqlState: nil, message: Self.errorText(PQerrorMessage(connection)))
                .storageError("entering pipeline mode")
        }
        var sent = 0
        var sendFailure: String?
        for statement in statements {
            trace?(statement.sql)
            let ok = Self.withParameters(statement.parameters) { count, types, values, lengths, formats in
                PQsendQueryParams(connection, statement.sql, count, types, values, lengths, formats, 1) == 1
            }
            guard ok else {
                sendFailure = Self.errorText(PQerrorMessage(connection))
                break
            }
            sent += 1
        }
        let synced = PQpipelineSync(connection) == 1
        // Every result is read, each query's ended by a null, then the sync's, so that pipeline mode can end.
        var results: [OpaquePointer?] = []
        for _ in 0..<sent {
            results.append(PQgetResult(connection))
            while let extra = PQgetResult(connection) { PQclear(extra) }
        }
        if synced, let sync = PQgetResult(connection) { PQclear(sync) }
        _ = PQexitPipelineMode(connection)
        // The first failure is the answer; the statements after it were not run, and say only that.
        var failure: (any Error)?
        var last: QueryResult?
        for (index, result) in results.enumerated() {
            if let result, PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
                continue
            }
            do {
                let answered = try checked(result, sql: statements[index].sql)
                if index == statements.count - 1 { last = answered }
            } catch {
                if failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
        if let sendFailure {
            throw PostgresError(sqlState: nil, message: sendFailure, sql: statements[sent].sql)
                .storageError("running SQL")
        }
        guard let last else {
            throw PostgresError(sqlState: nil, message: "no result", sql: statements.last?.sql ?? "")
                .storageError("running SQL")
        }
        return last
    }

    /// `body` with `parameters` encoded as libpq takes them, every value in binary format: owned copies alive until
    /// `body` returns, a nil pointer for SQL NULL.
    private static func withParameters<Result>(
        _ parameters: [Value],
        _ body: (
            _ count: Int32, _ types: [UInt32], _ values: [UnsafePointer<CChar>?], _ lengths: [Int32],
            _ formats: [Int32]
        ) throws -> Result
    ) rethrows -> Result {
        let encoded = parameters.map { $0.encoded() }
        let types = encoded.map(\.type)
        let lengths = encoded.map { Int32($0.bytes?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: encoded.count)
        let buffers: [UnsafeMutablePointer<CChar>?] = encoded.map { value in
            guard let bytes = value.bytes else { return nil }
            // One extra byte so an empty value still has a non-nil pointer (nil would mean NULL).
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            bytes.withUnsafeBytes { raw in
                UnsafeMutableRawPointer(buffer).copyMemory(
                    from: raw.baseAddress ?? UnsafeRawPointer(buffer), byteCount: bytes.count)
            }
            return buffer
        }
        defer { for buffer in buffers { buffer?.deallocate() } }
        return try body(Int32(encoded.count), types, buffers.map { UnsafePointer($0) }, lengths, formats)
    }

    /// The name `sql` is prepared under on this connection, preparing it first if needed; nil to run it unnamed.
    ///
    /// Only outside a transaction — the reads that run on their own, such as a GET's one lookup — so that a failed
    /// preparation can never abort a transaction, and only with every parameter's type named (a NULL leaves its
    /// type to the server, which would then fix it for later calls). The server then parses and plans the
    /// statement once per connection, not on every call; it still re-plans it by itself when the schema changes.
    private func preparedName(_ connection: OpaquePointer, _ sql: String, _ types: [UInt32]) -> String? {
        guard PQtransactionStatus(connection) == PQTRANS_IDLE, !types.contains(0) else { return nil }
        switch prepared.lookup(sql, types) {
        case .prepared(let name):
            return name
        case .full:
            return nil
        case .unprepared(let name):
            guard let result = PQprepare(connection, name, sql, Int32(types.count), types) else { return nil }
            defer { PQclear(result) }
            // 42P05: a statement of that name exists in the session already; the name is a digest of the text and
            // types, so it is this statement (a pooler's server connection that had it from an earlier client).
            guard PQresultStatus(result) == PGRES_COMMAND_OK || Self.sqlState(result) == "42P05" else {
                return nil
            }
            prepared.insert(sql, types, name)
            return name
        }
    }

    private static func sqlState(_ result: OpaquePointer) -> String? {
        PQresultErrorField(result, silo_pg_diag_sqlstate()).map { String(cString: $0) }
    }

    /// Runs SQL without parameters; it may hold several statements (migrations, BEGIN, COMMIT). Returns the last
    /// statement's result, in text format.
    /// Queued writes (``queue(_:_:)``) go first, in one round trip with a COMMIT; a ROLLBACK drops them unsent.
    @discardableResult
    func execute(_ sql: String) throws -> QueryResult {
        guard let connection = handle else {
            throw PostgresError(sqlState: nil, message: "connection is closed", sql: sql).storageError("running SQL")
        }
        if !queued.isEmpty {
            if sql == "ROLLBACK" {
                queued.removeAll()
                queuedBytes = 0
            } else if sql == "COMMIT" {
                queued.append((sql, []))
                return try sendQueued(connection)
            } else {
                _ = try sendQueued(connection)
            }
        }
        trace?(sql)
        return try checked(PQexec(connection, sql), sql: sql)
    }

    /// Runs `body` in one transaction: COMMIT if it returns, ROLLBACK if it throws. `prologue` (SQL without
    /// parameters) runs right after BEGIN in the same round trip, and `body` gets its result (text format).
    func transaction<Result>(
        isolation: String = "READ COMMITTED", prologue: String? = nil, _ body: (QueryResult) throws -> Result
    ) throws -> Result {
        let begun = try execute("BEGIN ISOLATION LEVEL \(isolation)" + (prologue.map { "; " + $0 } ?? ""))
        let result: Result
        do {
            result = try body(begun)
        } catch {
            // A broken connection has no transaction left to roll back; the pool drops it either way.
            _ = try? execute("ROLLBACK")
            throw error
        }
        do {
            try execute("COMMIT")
        } catch let error as StorageError where (error.cause as? PostgresError)?.isConnectionFailure == true {
            // The server may have committed before the connection broke. Not a PostgresError cause, so nobody
            // retries it: running the transaction again could apply it twice.
            throw StorageError(
                .unavailable, "the connection broke during COMMIT; the write may or may not have been applied",
                cause: error)
        } catch {
            // A queued write that failed in COMMIT's pipeline left the transaction open and aborted (the COMMIT
            // itself was not run); after a failed plain COMMIT this is a no-op.
            _ = try? execute("ROLLBACK")
            throw error
        }
        return result
    }

    // MARK: Notifications (LISTEN)

    /// The socket, to wait for notifications on (-1 when closed).
    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// Reads what the server has sent without waiting; false when the connection is broken.
    func consumeInput() -> Bool {
        guard let connection = handle else { return false }
        return PQconsumeInput(connection) == 1 && PQstatus(connection) == CONNECTION_OK
    }

    /// The notifications received so far (by `consumeInput` or any statement), oldest first.
    func takeNotifications() -> [(channel: String, payload: String, senderPID: Int32)] {
        guard let connection = handle else { return [] }
        var taken: [(channel: String, payload: String, senderPID: Int32)] = []
        while let notification = PQnotifies(connection) {
            taken.append(
                (
                    String(cString: notification.pointee.relname), String(cString: notification.pointee.extra),
                    notification.pointee.be_pid
                ))
            PQfreemem(notification)
        }
        return taken
    }

    private func checked(_ result: OpaquePointer?, sql: String) throws -> QueryResult {
        guard let result else {
            let message = handle.map { Self.errorText(PQerrorMessage($0)) } ?? "no result"
            throw PostgresError(sqlState: nil, message: message, sql: sql).storageError("running SQL")
        }
        let owned = QueryResult(result)
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return owned
        default:
            let message = Self.errorText(PQresultErrorMessage(result))
            throw PostgresError(sqlState: Self.sqlState(result), message: message, sql: sql).storageError(
                "running SQL")
        }
    }

    private static func errorText(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        return String(cString: text).trimmingTrailingNewlines()
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last.isNewline { text.removeLast() }
        return String(text)
    }
}
