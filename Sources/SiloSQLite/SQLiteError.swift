internal import CSQLite3
internal import SiloCore

/// A failed SQLite call: its (extended) result code, SQLite's message, and the statement, without bound values.
/// The `cause` of the StorageErrors SiloSQLite throws.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, …).
    public var code: Int32 { extendedCode & 0xFF }
    /// The extended result code (`SQLITE_CONSTRAINT_PRIMARYKEY`, `SQLITE_IOERR_FSYNC`, …).
    public var extendedCode: Int32
    public var message: String
    public var sql: String?

    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    public var description: String {
        "SQLite error \(extendedCode) (\(String(cString: sqlite3_errstr(extendedCode)))): \(message)"
            + (sql.map { " in \($0)" } ?? "")
    }

    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }
}

extension SQLiteError {
    /// Reads the error state of `db` right after the failing call.
    init(_ db: OpaquePointer?, result: Int32, sql: String? = nil) {
        let message =
            db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
        let extended = db.map { sqlite3_extended_errcode($0) } ?? result
        self.init(extendedCode: extended & 0xFF == result & 0xFF ? extended : result, message: message, sql: sql)
    }

    func storageError(_ context: String) -> StorageError {
        let mapped: StorageError.Code
        switch code {
        case SQLITE_BUSY, SQLITE_LOCKED: mapped = .unavailable
        case SQLITE_FULL: mapped = .insufficientStorage
        case SQLITE_CONSTRAINT:
            // SQLITE_CONSTRAINT_PRIMARYKEY (1555) and SQLITE_CONSTRAINT_UNIQUE (2067).
            let unique = extendedCode == 1555 || extendedCode == 2067
            mapped = unique ? .alreadyExists : .conflict
        case SQLITE_CORRUPT, SQLITE_NOTADB: mapped = .corrupt
        case SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PROTOCOL: mapped = .ioError
        // A read-only or forbidden database file is the server's fault (500), not the caller's permission.
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH: mapped = .ioError
        default: mapped = .internalError
        }
        return StorageError(mapped, "\(context): \(message)", cause: self)
    }
}
