internal import CSQLite3
internal import SiloCore

/// A value to bind. Internal: the store's public API speaks domain types only.
enum SQLValue {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

extension SQLValue {
    /// The value's size as stored: 8 for an integer, the bytes of a text or blob.
    var byteCount: Int {
        switch self {
        case .null: 0
        case .integer: 8
        case .text(let text): text.utf8.count
        case .blob(let bytes): bytes.count
        }
    }
}

extension Optional where Wrapped == String {
    var sqlValue: SQLValue { map(SQLValue.text) ?? .null }
}

/// A prepared statement, finalized in deinit. Owned by (and used only through) its ``Connection``.
final class Statement {
    let handle: OpaquePointer
    let sql: String
    private let db: OpaquePointer

    init(db: OpaquePointer, sql: String) throws {
        var handle: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard rc == SQLITE_OK, let handle else {
            throw SQLiteError(db, result: rc, sql: sql).storageError("preparing a statement")
        }
        self.db = db
        self.handle = handle
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func bind(_ values: [SQLValue]) throws {
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(handle, position)
            case .integer(let number):
                rc = sqlite3_bind_int64(handle, position, number)
            case .text(let string):
                // Explicit length: a NUL inside the string must not cut it short.
                let bytes = Array(string.utf8)
                rc = bytes.withUnsafeBufferPointer { buffer in
                    // An empty buffer may have a nil base address, which SQLite would bind as NULL.
                    let base = buffer.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(bitPattern: 1)!
                    return sqlite3_bind_text(
                        handle, position, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count),
                        silo_sqlite_transient())
                }
            case .blob(let bytes):
                if bytes.isEmpty {
                    rc = sqlite3_bind_zeroblob(handle, position, 0)
                } else {
                    rc = bytes.withUnsafeBytes {
                        sqlite3_bind_blob(handle, position, $0.baseAddress, Int32($0.count), silo_sqlite_transient())
                    }
                }
            }
            guard rc == SQLITE_OK else { throw SQLiteError(db, result: rc, sql: sql).storageError("binding a value") }
        }
    }

    /// Advances to the next row; false when the statement is done.
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc: throw SQLiteError(db, result: rc, sql: sql).storageError("running a statement")
        }
    }

    /// Ready for the next use; called after every use so no statement stays busy (and holds a read snapshot).
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: Columns of the current row

    var columnCount: Int32 { sqlite3_column_count(handle) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func text(_ column: Int32) -> String {
        guard let base = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    /// A text column's UTF-8 bytes, for decoders that work on bytes (no String built only to be taken apart).
    func textBytes(_ column: Int32) -> [UInt8] {
        guard let base = sqlite3_column_text(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeBufferPointer(start: base, count: count))
    }

    func blob(_ column: Int32) -> [UInt8] {
        guard let base = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }
}
