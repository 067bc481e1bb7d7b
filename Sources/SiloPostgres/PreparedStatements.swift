/// The statements one ``Connection`` has prepared, by SQL text and parameter types, at most ``limit`` of them (the
/// store's statements are a fixed set of texts, so the bound is never reached in practice; past it, statements run
/// unnamed).
///
/// A statement's name is a digest of its text and types, so one name always means one statement: a pooler that
/// hands this session a server connection where another client prepared it finds the same statement there.
struct PreparedStatements {
    private struct Key: Hashable {
        var sql: String
        var types: [UInt32]
    }

    enum Lookup: Equatable {
        case prepared(String)
        /// Not prepared yet; prepare it under this name.
        case unprepared(String)
        /// Not prepared, and no room to.
        case full
    }

    static let limit = 64
    private var names: [Key: String] = [:]

    func lookup(_ sql: String, _ types: [UInt32]) -> Lookup {
        let key = Key(sql: sql, types: types)
        if let name = names[key] { return .prepared(name) }
        return names.count < Self.limit ? .unprepared(Self.name(key)) : .full
    }

    mutating func insert(_ sql: String, _ types: [UInt32], _ name: String) {
        guard names.count < Self.limit else { return }
        names[Key(sql: sql, types: types)] = name
    }

    mutating func forget(_ sql: String, _ types: [UInt32]) {
        names[Key(sql: sql, types: types)] = nil
    }

    var count: Int { names.count }

    /// `silo_` and the 64-bit FNV-1a digest of the text and the types, in hex: stable across processes and builds
    /// (Swift's `Hasher` is seeded per process).
    private static func name(_ key: Key) -> String {
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            digest ^= UInt64(byte)
            digest &*= 0x100_0000_01b3
        }
        for byte in key.sql.utf8 { mix(byte) }
        for type in key.types {
            mix(0)
            withUnsafeBytes(of: type.littleEndian) { for byte in $0 { mix(byte) } }
        }
        let hex = String(digest, radix: 16)
        return "silo_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
