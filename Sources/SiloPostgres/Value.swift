/// A statement parameter, sent in PostgreSQL's binary format with its type named (so the server never guesses).
enum Value {
    case null
    case int64(Int64)
    case text(String)
    case bytes([UInt8])
    case bool(Bool)

    /// Type OIDs from `pg_type` (fixed since PostgreSQL 7).
    enum TypeOID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let text: UInt32 = 25
        static let varchar: UInt32 = 1043
    }

    /// How many bytes ``encoded()`` sends, without making them.
    var encodedByteCount: Int {
        switch self {
        case .null: 0
        case .int64: 8
        case .text(let value): value.utf8.count
        case .bytes(let value): value.count
        case .bool: 1
        }
    }

    /// The parameter's type OID and its bytes in binary format (nil for NULL, whose type the server infers).
    func encoded() -> (type: UInt32, bytes: [UInt8]?) {
        switch self {
        case .null: (0, nil)
        case .int64(let value): (TypeOID.int8, withUnsafeBytes(of: value.bigEndian) { Array($0) })
        case .text(let value): (TypeOID.text, Array(value.utf8))
        case .bytes(let value): (TypeOID.bytea, value)
        case .bool(let value): (TypeOID.bool, [value ? 1 : 0])
        }
    }
}

extension String? {
    /// The string, or SQL NULL.
    var value: Value { map(Value.text) ?? .null }
}
