internal import SiloCore

/// A failed libpq call or statement: the SQLSTATE (when the server sent one), the server's or libpq's message, and
/// the statement, without bound values. The `cause` of the StorageErrors SiloPostgres throws.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE (`23505`, `40001`, …), or nil for a client-side failure (no connection, a
    /// broken socket) that never reached the server.
    public var sqlState: String?
    public var message: String
    public var sql: String?

    public init(sqlState: String?, message: String, sql: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
    }

    public var description: String {
        "PostgreSQL error \(sqlState ?? "(client)"): \(message)" + (sql.map { " in \($0)" } ?? "")
    }

    /// `unique_violation`: a duplicate key.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// `serialization_failure` or `deadlock_detected`: the transaction was rolled back and may simply be run again.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// The connection is gone or unusable: no SQLSTATE (libpq failed locally), class 08 (connection exception),
    /// or the server shutting down (57P01–57P03).
    public var isConnectionFailure: Bool {
        guard let sqlState else { return true }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    func storageError(_ context: String) -> StorageError {
        let mapped: StorageError.Code
        switch sqlState {
        case _ where isConnectionFailure: mapped = .unavailable
        case "23505": mapped = .alreadyExists
        case let state? where state.hasPrefix("23"): mapped = .conflict
        case "40001", "40P01": mapped = .unavailable
        case "53100": mapped = .insufficientStorage
        case let state? where state.hasPrefix("53") || state == "57014" || state == "55P03": mapped = .unavailable
        // The database refusing Silo's own role is a server fault (500), never the caller's missing permission.
        case let state? where state.hasPrefix("42501") || state.hasPrefix("28"): mapped = .internalError
        case let state? where state.hasPrefix("XX") || state.hasPrefix("58"): mapped = .ioError
        default: mapped = .internalError
        }
        return StorageError(mapped, "\(context): \(message)", cause: self)
    }
}

/// Errors SiloPostgres raises itself (not from PostgreSQL).
enum StorageErrorFactory {
    static func newerSchema(found: Int64, known: Int) -> StorageError {
        StorageError(.unavailable, "the metadata database has schema version \(found); this Silo knows up to \(known)")
    }

    static func corruptRow(_ what: String, cause: (any Error & Sendable)? = nil) -> StorageError {
        StorageError(.corrupt, "metadata database holds an invalid \(what)", cause: cause)
    }
}
