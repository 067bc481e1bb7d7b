internal import SiloCore
internal import SiloWire

/// The JSON of an object row's `custom_metadata` (`[String: String]`) and `download_tokens` (`[String]`).
///
/// These are decoded for every row a listing returns, and two `JSONDecoder` runs per row made a 1000-row page cost
/// several milliseconds; SiloWire's byte-level parser does the same work without Foundation's Codable machinery.
/// Strict: anything but exactly the expected shape is a corrupt row. It reads what the earlier `JSONEncoder` wrote
/// (plain JSON, sorted keys, unescaped slashes); it writes the same shape, keys sorted by UTF-8 bytes, so equal
/// values still store as equal text.
enum FieldJSON {
    static func encode(_ map: [String: String]) -> String {
        let members = map.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { (key: $0.key, value: JSONValue.string($0.value)) }
        var object = JSONObject()
        object.members = members
        return JSONValue.object(object).serializedString
    }

    static func encode(_ list: [String]) -> String {
        JSONValue.array(list.map(JSONValue.string)).serializedString
    }

    static func stringMap(_ bytes: [UInt8], column: String) throws -> [String: String] {
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

    static func stringList(_ bytes: [UInt8], column: String) throws -> [String] {
        guard case .array(let items) = try parse(bytes, column: column) else { throw corrupt(column) }
        return try items.map { item in
            guard case .string(let value) = item else { throw corrupt(column) }
            return value
        }
    }

    private static func parse(_ bytes: [UInt8], column: String) throws -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch let error as JSONParseError {
            throw StorageErrorFactory.corruptRow("\(column) JSON", cause: StorageError(.corrupt, error.description))
        }
    }

    private static func corrupt(_ column: String) -> StorageError {
        StorageErrorFactory.corruptRow("\(column) JSON (wrong shape)")
    }
}
