internal import CLibPQ
internal import SiloCore

/// What `--metadata postgres://…` names: a libpq connection URI (or `key=value` connection string), plus Silo's
/// own `pool_size` query parameter, which is taken out before libpq sees it (libpq rejects parameters it does not
/// know).
struct PostgresURL {
    /// The text handed to `PQconnectdb`.
    var conninfo: String
    var poolSize: Int?

    init(_ text: String) throws {
        conninfo = text
        let isURI = text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
        if isURI, let questionMark = text.firstIndex(of: "?") {
            var kept: [Substring] = []
            for parameter in text[text.index(after: questionMark)...].split(separator: "&") {
                guard parameter.hasPrefix("pool_size=") else {
                    kept.append(parameter)
                    continue
                }
                guard let size = Int(parameter.dropFirst("pool_size=".count)), size > 0 else {
                    throw StorageError(.invalidArgument, "pool_size in a PostgreSQL URL must be a positive integer")
                }
                poolSize = size
            }
            let base = text[..<questionMark]
            conninfo = kept.isEmpty ? String(base) : base + "?" + kept.joined(separator: "&")
        }
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            if let message { PQfreemem(message) }
            // libpq's message may quote part of the text, which can hold a password: it is not repeated.
            throw StorageError(.invalidArgument, "not a valid PostgreSQL URL (postgres://user@host:port/database)")
        }
        PQconninfoFree(options)
    }
}

/// The advisory-lock key of an object name: FNV-1a (64-bit) over the schema's, a 0 byte, the bucket's UTF-8, a 0 byte, and the name's UTF-8.
/// Stable across processes and versions (Swift's `Hasher` is seeded per process, so it would not do), so every node
/// computes the same key for the same name.
enum NameLock {
    static func key(_ namespace: String, _ bucket: BucketName, _ name: ObjectName) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        for byte in namespace.utf8 { mix(byte) }
        mix(0)
        for byte in bucket.rawValue.utf8 { mix(byte) }
        mix(0)
        for byte in name.rawValue.utf8 { mix(byte) }
        return Int64(bitPattern: hash)
    }
}

/// A schema name restricted to letters, digits and `_` (not starting with a digit), so quoting it is trivial and
/// it can appear in DDL, which takes no parameters.
struct SchemaName {
    let name: String

    init(_ name: String) throws {
        let valid =
            !name.isEmpty && name.utf8.count <= 63 && name.first.map { !$0.isNumber } == true
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0))
            }
        guard valid else {
            throw StorageError(.invalidArgument, "a PostgreSQL schema name must be letters, digits and _: \(name)")
        }
        self.name = name
    }

    /// The name as a quoted identifier (it holds no quote, so it needs no escaping).
    var quoted: String { "\"\(name)\"" }
}
