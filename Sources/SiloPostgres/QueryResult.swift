internal import CLibPQ
internal import SiloCore

/// One `PGresult*`, cleared in deinit. Every column arrives in binary format (`Connection.query` asks for it).
final class QueryResult {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    var rowCount: Int { Int(PQntuples(handle)) }
    var columnCount: Int { Int(PQnfields(handle)) }

    /// Rows affected by an INSERT, UPDATE or DELETE.
    var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    func row(_ index: Int) -> Row { Row(result: self, index: Int32(index)) }

    /// Decodes every row with `decode`.
    func map<T>(_ decode: (Row) throws -> T) rethrows -> [T] {
        try (0..<rowCount).map { try decode(row($0)) }
    }

    /// Decodes the first row, if any.
    func first<T>(_ decode: (Row) throws -> T) rethrows -> T? {
        rowCount > 0 ? try decode(row(0)) : nil
    }

    fileprivate func isNull(_ row: Int32, _ column: Int32) -> Bool { PQgetisnull(handle, row, column) != 0 }
    fileprivate func type(_ column: Int32) -> UInt32 { PQftype(handle, column) }

    fileprivate func bytes(_ row: Int32, _ column: Int32) -> UnsafeRawBufferPointer {
        let length = Int(PQgetlength(handle, row, column))
        return UnsafeRawBufferPointer(start: PQgetvalue(handle, row, column), count: length)
    }
}

@available(*, unavailable)
extension QueryResult: Sendable {}

/// One row of a result, alive as long as the result.
struct Row {
    fileprivate let result: QueryResult
    fileprivate let index: Int32

    var columnCount: Int { result.columnCount }

    func isNull(_ column: Int) -> Bool { result.isNull(index, Int32(column)) }

    /// An `int2`, `int4` or `int8` column (big-endian in binary format), or a `bool` as 0/1.
    func int64(_ column: Int) throws -> Int64 {
        let raw = result.bytes(index, Int32(column))
        switch (result.type(Int32(column)), raw.count) {
        case (Value.TypeOID.int8, 8): return Int64(bigEndian: raw.loadUnaligned(as: Int64.self))
        case (Value.TypeOID.int4, 4): return Int64(Int32(bigEndian: raw.loadUnaligned(as: Int32.self)))
        case (Value.TypeOID.int2, 2): return Int64(Int16(bigEndian: raw.loadUnaligned(as: Int16.self)))
        case (Value.TypeOID.bool, 1): return Int64(raw[0])
        default: throw StorageErrorFactory.corruptRow("integer in column \(column)")
        }
    }

    func optionalInt64(_ column: Int) throws -> Int64? { isNull(column) ? nil : try int64(column) }

    func bool(_ column: Int) throws -> Bool { try int64(column) != 0 }

    /// The raw bytes of a `bytea`, or the UTF-8 of a `text`.
    func bytes(_ column: Int) -> [UInt8] { Array(result.bytes(index, Int32(column))) }

    /// A `text` column (binary format is its UTF-8 bytes).
    func text(_ column: Int) -> String { String(decoding: result.bytes(index, Int32(column)), as: UTF8.self) }

    func optionalText(_ column: Int) -> String? { isNull(column) ? nil : text(column) }
}

@available(*, unavailable)
extension Row: Sendable {}
