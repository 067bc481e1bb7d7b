/// Rules equality and ordering. Different kinds compare unequal rather than failing; int and float
/// compare numerically; strings compare by Unicode scalars (not by canonical equivalence, which Swift's `==` uses).
enum Compare {
    static func equal(_ a: RulesValue, _ b: RulesValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.float(let x), .float(let y)): return x == y
        case (.int(let x), .float(let y)), (.float(let y), .int(let x)): return intEqualsDouble(x, y)
        case (.string(let x), .string(let y)): return stringsEqual(x, y)
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.duration(let x), .duration(let y)), (.timestamp(let x), .timestamp(let y)): return x == y
        case (.path(let x), .path(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { stringsEqual($0, $1) }
        case (.list(let x), .list(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.map(let x), .map(let y)): return mapsEqual(x, y)
        case (.set(let x), .set(let y)):
            return x.count == y.count && x.allSatisfy { e in contains(y, e) }
        case (.mapDiff(let l1, let r1), .mapDiff(let l2, let r2)): return mapsEqual(l1, l2) && mapsEqual(r1, r2)
        case (.latlng(let a1, let o1), .latlng(let a2, let o2)): return a1 == a2 && o1 == o2
        default: return false
        }
    }

    static func mapsEqual(_ x: [String: RulesValue], _ y: [String: RulesValue]) -> Bool {
        guard x.count == y.count else { return false }
        for (k, v) in x {
            guard let w = y[k], equal(v, w) else { return false }
        }
        return true
    }

    static func stringsEqual(_ x: String, _ y: String) -> Bool { x.utf8.elementsEqual(y.utf8) }

    static func contains(_ list: [RulesValue], _ value: RulesValue) -> Bool {
        list.contains { equal($0, value) }
    }

    /// Exact: `1 == 1.0` but `9007199254740993 != 9007199254740992.0`.
    static func intEqualsDouble(_ i: Int64, _ d: Double) -> Bool {
        guard d.isFinite, d.rounded(.towardZero) == d, d >= -9.223372036854775808e18, d < 9.223372036854775808e18
        else { return false }
        return Int64(d) == i
    }

    /// Negative, zero or positive; nil when the kinds are not ordered against each other (then the operator is ⊥).
    static func order(_ a: RulesValue, _ b: RulesValue) -> Int? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.float(let x), .float(let y)): return doubleOrder(x, y)
        case (.int(let x), .float(let y)): return mixedOrder(x, y)
        case (.float(let x), .int(let y)):
            let o = mixedOrder(y, x)
            return o == unordered ? o : -o
        case (.string(let x), .string(let y)):
            if x.utf8.elementsEqual(y.utf8) { return 0 }
            // UTF-8 byte order equals code point order.
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
        case (.bytes(let x), .bytes(let y)):
            if x == y { return 0 }
            return x.lexicographicallyPrecedes(y) ? -1 : 1
        case (.timestamp(let x), .timestamp(let y)), (.duration(let x), .duration(let y)):
            return x < y ? -1 : (x == y ? 0 : 1)
        default: return nil
        }
    }

    /// NaN is unordered: every comparison with it is false, which we express as "not equal, not less, not greater"
    /// by returning a sentinel that no relational operator accepts.
    static let unordered = Int.min

    private static func doubleOrder(_ x: Double, _ y: Double) -> Int {
        if x.isNaN || y.isNaN { return unordered }
        return x < y ? -1 : (x == y ? 0 : 1)
    }

    private static func mixedOrder(_ i: Int64, _ d: Double) -> Int {
        if d.isNaN { return unordered }
        if d >= 9.223372036854775808e18 { return -1 }
        if d < -9.223372036854775808e18 { return 1 }
        let t = d.rounded(.towardZero)
        let ti = Int64(t)
        if i != ti { return i < ti ? -1 : 1 }
        // Same integer part: the fraction decides.
        return d > t ? -1 : (d < t ? 1 : 0)
    }
}

/// A set keeps unique elements under rules equality; sets are small, so a linear scan is fine.
func makeSet(_ values: [RulesValue]) -> [RulesValue] {
    var out: [RulesValue] = []
    out.reserveCapacity(values.count)
    for v in values where !Compare.contains(out, v) { out.append(v) }
    return out
}
