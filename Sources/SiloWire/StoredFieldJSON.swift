import SiloCore

/// The JSON of an object row's `custom_metadata` (`[String: String]`) and `download_tokens` (`[String]`).
///
/// These are decoded for every row a listing returns, and two `JSONDecoder` runs per row made a 1000-row page cost
/// several milliseconds; SiloWire's byte-level parser does the same work without Foundation's Codable machinery.
/// Strict: anything but exactly the expected shape is a corrupt row. It reads what the earlier `JSONEncoder` wrote
/// (plain JSON, sorted keys, unescaped slashes); it writes the same shape, keys sorted by UTF-8 bytes, so equal
/// values still store as equal text.
/// Shared by every metadata store that keeps these columns as text (SQLite, PostgreSQL).
public enum StoredFieldJSON {
    public static func encode(_ map: [String: String]) -> String {
        let members = map.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { (key: $0.key, value: JSONValue.string($0.value)) }
        var object = JSONObject()
        object.members = members
        return JSONValue.object(object).serializedString
    }

    public static func encode(_ list: [String]) -> String {
        JSONValue.array(list.map(JSONValue.string)).serializedString
    }

    public static func stringMap(_ bytes: [UInt8], column: String) throws -> [String: String] {
        if bytes.count == 2 && bytes[0] == UInt8(ascii: "{") && bytes[1] == UInt8(ascii: "}") { return [:] }
        guard case .object(let object) = try parse(bytes, column: column) else { throw corrupt(column) }
        var map: [String: String] = [:]
        map.reserveCapacity(object.members.count)
        for member in object.members {
            // A duplicate key would silently drop a value; no writer of this column ever produced one.
            guard case .string(let value) = member.value, map.updateValue(value, forKey: member.key) == nil else {
                throw corrupt(column)
            }
        }
        return map
    }

    public static func stringList(_ bytes: [UInt8], column: String) throws -> [String] {
        if let list = plainStringList(bytes) { return list }
        guard case .array(let items) = try parse(bytes, column: column) else { throw corrupt(column) }
        return try items.map { item in
            guard case .string(let value) = item else { throw corrupt(column) }
            return value
        }
    }

    /// The common shape `["a","b"]` (what `encode` writes for strings without escapes), decoded without the general
    /// parser; nil for anything else (escapes, control bytes, spaces, invalid UTF-8), which the parser then decides.
    /// Without a backslash every `"` is a delimiter, so splitting on `","` finds exactly the parser's strings.
    public static func plainStringList(_ bytes: [UInt8]) -> [String]? {
        let n = bytes.count
        if n == 2 && bytes[0] == UInt8(ascii: "[") && bytes[1] == UInt8(ascii: "]") { return [] }
        guard n >= 4, bytes[0] == UInt8(ascii: "["), bytes[1] == 0x22, bytes[n - 2] == 0x22,
            bytes[n - 1] == UInt8(ascii: "]")
        else { return nil }
        var list: [String] = []
        var start = 2
        var i = 2
        while i < n - 2 {
            let b = bytes[i]
            if b < 0x20 || b == 0x5C { return nil }
            if b == 0x22 {
                // Only `","` may separate two strings here.
                guard i + 2 < n - 2, bytes[i + 1] == UInt8(ascii: ","), bytes[i + 2] == 0x22 else { return nil }
                guard let item = String(validating: bytes[start..<i], as: UTF8.self) else { return nil }
                list.append(item)
                i += 3
                start = i
                continue
            }
            i += 1
        }
        guard let last = String(validating: bytes[start..<(n - 2)], as: UTF8.self) else { return nil }
        list.append(last)
        return list
    }

    private static func parse(_ bytes: [UInt8], column: String) throws -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch let error as JSONParseError {
            throw StorageError(
                .corrupt, "metadata database holds an invalid \(column) JSON",
                cause: StorageError(.corrupt, error.description))
        }
    }

    private static func corrupt(_ column: String) -> StorageError {
        StorageError(.corrupt, "metadata database holds an invalid \(column) JSON (wrong shape)")
    }
}
