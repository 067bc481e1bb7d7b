internal import SiloCore

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
