/// A value in the rules language. Errors are values too (`.error`), which makes the "an error never grants"
/// rule mechanical: every operator propagates them, and only `&&`/`||` may absorb them.
public enum RulesValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Double)
    case string(String)
    case bytes([UInt8])
    case duration(TimeValue)
    case timestamp(TimeValue)
    /// Path segments, without the leading slash.
    case path([String])
    case list([RulesValue])
    /// String keys only.
    case map([String: RulesValue])
    /// Elements are kept unique under rules equality; there is no set literal.
    case set([RulesValue])
    /// The result of `a.diff(b)`: the two maps, compared lazily by the MapDiff methods.
    case mapDiff(left: [String: RulesValue], right: [String: RulesValue])
    case latlng(latitude: Double, longitude: Double)
    /// ⊥: anything that could not be computed.
    case error(RulesFault)
}

/// Why a value is ⊥, and where in the source it arose (byte offset; -1 when unknown).
public struct RulesFault: Sendable, Error, Equatable {
    public var message: String
    public var offset: Int
    /// The value is not known yet (an upload's checksums before its bytes arrive): an `allow` whose condition ends
    /// in such a fault neither grants nor denies; see `RulesDecision.undetermined`. Operators pass faults on
    /// unchanged, so the mark survives everything that depended on the unknown value, while `false && ⊥` and
    /// `true || ⊥` still decide.
    public var undetermined: Bool

    public init(_ message: String, offset: Int = -1, undetermined: Bool = false) {
        self.message = message
        self.offset = offset
        self.undetermined = undetermined
    }
}

/// Seconds plus nanoseconds, with `nanos` always in `0..<1_000_000_000` (floor form), so that ordering is the
/// lexicographic order of the pair. Used for both timestamps (since the Unix epoch) and durations.
public struct TimeValue: Sendable, Hashable, Comparable {
    public var seconds: Int64
    public var nanos: Int32

    public init(seconds: Int64, nanos: Int32) {
        self.seconds = seconds
        self.nanos = nanos
    }

    /// Normalises any nanosecond count into the floor form; nil on overflow.
    static func make(seconds: Int64, nanos: Int64) -> TimeValue? {
        var s = seconds
        var n = nanos
        let carry = n / 1_000_000_000
        n -= carry * 1_000_000_000
        if n < 0 {
            n += 1_000_000_000
            guard let t = Int64(carry).subtractingReportingOverflowValue(1) else { return nil }
            guard let r = s.addingReportingOverflowValue(t) else { return nil }
            s = r
        } else {
            guard let r = s.addingReportingOverflowValue(carry) else { return nil }
            s = r
        }
        return TimeValue(seconds: s, nanos: Int32(n))
    }

    public static func < (a: TimeValue, b: TimeValue) -> Bool {
        a.seconds != b.seconds ? a.seconds < b.seconds : a.nanos < b.nanos
    }
}

extension Int64 {
    func addingReportingOverflowValue(_ other: Int64) -> Int64? {
        let (r, o) = addingReportingOverflow(other)
        return o ? nil : r
    }
    func subtractingReportingOverflowValue(_ other: Int64) -> Int64? {
        let (r, o) = subtractingReportingOverflow(other)
        return o ? nil : r
    }
    func multipliedReportingOverflowValue(_ other: Int64) -> Int64? {
        let (r, o) = multipliedReportingOverflow(by: other)
        return o ? nil : r
    }
}

extension RulesValue {
    /// The type name used in messages and by `is`.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .string: "string"
        case .bytes: "bytes"
        case .duration: "duration"
        case .timestamp: "timestamp"
        case .path: "path"
        case .list: "list"
        case .map: "map"
        case .set: "set"
        case .mapDiff: "map_diff"
        case .latlng: "latlng"
        case .error: "error"
        }
    }

    public var isError: Bool { if case .error = self { true } else { false } }
}
