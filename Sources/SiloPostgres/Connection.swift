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
    }

    /// The server process serving this connection (tests use it to tell connections apart and to kill one).
    var backendPID: Int32 {
        handle.map { PQbackendPID($0) } ?? 0
    }

    // MARK: Running statements

    /// Runs one parameterized statement and returns its rows, every column in binary format.
    @discardableResult
    func query(_ sql: String, _ parameters: [Value] = []) throws -> QueryResult {
        guard let connection = handle else {
            throw PostgresError(sqlState: nil, message: "connection is closed", sql: sql).storageError("running SQL")
        }
        trace?(sql)
        let encoded = parameters.map { $0.encoded() }
        let types = encoded.map(\.type)
        let lengths = encoded.map { Int32($0.bytes?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: encoded.count)
        // Owned copies of every value, alive until PQexecParams returns; a nil pointer is SQL NULL.
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
        let values = buffers.map { UnsafePointer($0) }
        let binaryResults: Int32 = 1
        let count = Int32(encoded.count)
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
    @discardableResult
    func execute(_ sql: String) throws -> QueryResult {
        guard let connection = handle else {
            throw PostgresError(sqlState: nil, message: "connection is closed", sql: sql).storageError("running SQL")
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
