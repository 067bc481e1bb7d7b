/// A JSON document that keeps what the wire needs and `JSONSerialization` loses: object key order, the
/// difference between an absent key and `null`, and number literals as written (int64 generations stay exact).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number exactly as it appeared in the text.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var objectValue: JSONObject? { if case .object(let o) = self { o } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var isNull: Bool { self == .null }
    public var int64Value: Int64? {
        switch self {
        case .number(let n): Int64(n)
        case .string(let s): Int64(s)
        default: nil
        }
    }

    public static func number(_ value: Int64) -> JSONValue { .number(String(value)) }
    public static func number(_ value: Int) -> JSONValue { .number(String(value)) }
}

/// An object with ordered keys; lookups are linear, which is right for the small objects of this protocol.
public struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public var members: [(key: String, value: JSONValue)]

    public init() { members = [] }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { members = elements.map { ($0.0, $0.1) } }

    /// The value for `key`: nil when absent, `.null` when present as null.
    public subscript(key: String) -> JSONValue? {
        get { members.last { $0.key == key }?.value }
        set {
            if let i = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    public var keys: [String] { members.map(\.key) }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.members.count == b.members.count
            && zip(a.members, b.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}
