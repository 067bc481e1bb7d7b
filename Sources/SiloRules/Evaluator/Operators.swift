/// The operators of the rules language. Every function propagates ⊥ operands and returns ⊥ for type mismatches.
enum Operators {
    static func fault(_ m: String, _ at: Int) -> RulesValue { .error(RulesFault(m, offset: at)) }

    static func unary(_ op: UnaryOp, _ v: RulesValue, _ at: Int) -> RulesValue {
        if case .error = v { return v }
        switch (op, v) {
        case (.not, .bool(let b)): return .bool(!b)
        case (.negate, .int(let i)):
            return i == .min ? fault("integer overflow in negation", at) : .int(-i)
        case (.negate, .float(let d)): return .float(-d)
        case (.negate, .duration(let d)):
            return Time.negate(d).map { .duration($0) } ?? fault("duration overflow", at)
        default:
            return fault("operator '\(op == .not ? "!" : "-")' does not apply to \(v.typeName)", at)
        }
    }

    static func binary(_ op: BinaryOp, _ a: RulesValue, _ b: RulesValue, _ at: Int, _ interp: Interpreter) -> RulesValue
    {
        if case .error(let fa) = a {
            // A certain fault on the other side makes the result certainly ⊥, whatever the unknown turns out to be.
            if fa.undetermined, case .error(let fb) = b, !fb.undetermined { return b }
            return a
        }
        if case .error = b { return b }
        switch op {
        case .equal: return .bool(Compare.equal(a, b))
        case .notEqual: return .bool(!Compare.equal(a, b))
        case .less, .lessEqual, .greater, .greaterEqual:
            guard let o = Compare.order(a, b) else {
                return fault("cannot compare \(a.typeName) and \(b.typeName) with '\(op.rawValue)'", at)
            }
            if o == Compare.unordered { return .bool(false) }
            switch op {
            case .less: return .bool(o < 0)
            case .lessEqual: return .bool(o <= 0)
            case .greater: return .bool(o > 0)
            default: return .bool(o >= 0)
            }
        case .in:
            switch b {
            case .list(let l), .set(let l):
                guard interp.charge(l.count) else { return fault("work limit exceeded", at) }
                return .bool(Compare.contains(l, a))
            case .map(let m):
                guard case .string(let k) = a else { return .bool(false) }
                return .bool(m[k] != nil)
            default: return fault("'in' needs a list, set or map on the right, not \(b.typeName)", at)
            }
        case .add: return add(a, b, at, interp)
        case .subtract: return subtract(a, b, at)
        case .multiply, .divide, .remainder: return arithmetic(op, a, b, at)
        }
    }

    private static func add(_ a: RulesValue, _ b: RulesValue, _ at: Int, _ interp: Interpreter) -> RulesValue {
        switch (a, b) {
        case (.string(let x), .string(let y)):
            guard x.utf8.count + y.utf8.count <= Limits.maxValueBytes else { return fault("string too long", at) }
            guard interp.charge((x.utf8.count + y.utf8.count) / 64) else { return fault("work limit exceeded", at) }
            return .string(x + y)
        case (.list(let x), .list(let y)):
            guard x.count + y.count <= Limits.maxCollectionCount else { return fault("list too long", at) }
            guard interp.charge(x.count + y.count) else { return fault("work limit exceeded", at) }
            return .list(x + y)
        case (.timestamp(let t), .duration(let d)), (.duration(let d), .timestamp(let t)):
            return Time.timestamp(Time.add(t, d), at)
        case (.duration(let x), .duration(let y)):
            return Time.add(x, y).map { .duration($0) } ?? fault("duration overflow", at)
        default: return arithmetic(.add, a, b, at)
        }
    }

    private static func subtract(_ a: RulesValue, _ b: RulesValue, _ at: Int) -> RulesValue {
        switch (a, b) {
        case (.timestamp(let t), .duration(let d)):
            return Time.timestamp(Time.negate(d).flatMap { Time.add(t, $0) }, at)
        case (.timestamp(let x), .timestamp(let y)):
            return Time.negate(y).flatMap { Time.add(x, $0) }.map { .duration($0) } ?? fault("duration overflow", at)
        case (.duration(let x), .duration(let y)):
            return Time.negate(y).flatMap { Time.add(x, $0) }.map { .duration($0) } ?? fault("duration overflow", at)
        default: return arithmetic(.subtract, a, b, at)
        }
    }

    private static func arithmetic(_ op: BinaryOp, _ a: RulesValue, _ b: RulesValue, _ at: Int) -> RulesValue {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            let result: (Int64, Bool)
            switch op {
            case .add: result = x.addingReportingOverflow(y)
            case .subtract: result = x.subtractingReportingOverflow(y)
            case .multiply: result = x.multipliedReportingOverflow(by: y)
            case .divide:
                if y == 0 { return fault("integer division by zero", at) }
                result = x.dividedReportingOverflow(by: y)
            default:
                if y == 0 { return fault("integer modulo by zero", at) }
                result = x.remainderReportingOverflow(dividingBy: y)
            }
            return result.1 ? fault("integer overflow in '\(op.rawValue)'", at) : .int(result.0)
        case (.int, .float), (.float, .int), (.float, .float):
            let x = a.asDouble!
            let y = b.asDouble!
            switch op {
            case .add: return .float(x + y)
            case .subtract: return .float(x - y)
            case .multiply: return .float(x * y)
            case .divide: return .float(x / y)
            default: return .float(x.truncatingRemainder(dividingBy: y))
            }
        default:
            return fault("operator '\(op.rawValue)' does not apply to \(a.typeName) and \(b.typeName)", at)
        }
    }

    static func isType(_ v: RulesValue, _ t: TypeName) -> Bool {
        switch (t, v) {
        case (.bool, .bool), (.bytes, .bytes), (.duration, .duration), (.float, .float), (.int, .int),
            (.latlng, .latlng), (.list, .list), (.map, .map), (.mapDiff, .mapDiff), (.path, .path), (.set, .set),
            (.string, .string), (.timestamp, .timestamp), (.number, .int), (.number, .float):
            true
        default: false
        }
    }

    static func member(_ v: RulesValue, _ name: String, _ at: Int) -> RulesValue {
        switch v {
        case .error: return v
        case .map(let m): return m[name] ?? fault("no key '\(name)' in map", at)
        case .null: return fault("'.\(name)' on null", at)
        default: return fault("'.\(name)' on \(v.typeName), which has no fields", at)
        }
    }

    static func index(_ v: RulesValue, _ i: RulesValue, _ at: Int) -> RulesValue {
        if case .error = v { return v }
        if case .error = i { return i }
        switch (v, i) {
        case (.list(let l), .int(let n)):
            return n >= 0 && n < l.count ? l[Int(n)] : fault("list index \(n) out of range", at)
        case (.path(let p), .int(let n)):
            return n >= 0 && n < p.count ? .string(p[Int(n)]) : fault("path index \(n) out of range", at)
        case (.string(let s), .int(let n)):
            let scalars = s.unicodeScalars
            guard n >= 0, n < scalars.count else { return fault("string index \(n) out of range", at) }
            return .string(String(scalars[scalars.index(scalars.startIndex, offsetBy: Int(n))]))
        case (.map(let m), .string(let k)): return m[k] ?? fault("no key '\(k)' in map", at)
        default: return fault("cannot index \(v.typeName) with \(i.typeName)", at)
        }
    }

    static func slice(_ v: RulesValue, _ i: RulesValue, _ j: RulesValue, _ at: Int) -> RulesValue {
        for x in [v, i, j] { if case .error = x { return x } }
        guard case .int(let lo) = i, case .int(let hi) = j else { return fault("range bounds must be ints", at) }
        switch v {
        case .list(let l):
            guard lo >= 0, lo <= hi, hi <= l.count else { return fault("range [\(lo):\(hi)] out of bounds", at) }
            return .list(Array(l[Int(lo)..<Int(hi)]))
        case .string(let s):
            let scalars = Array(s.unicodeScalars)
            guard lo >= 0, lo <= hi, hi <= scalars.count else { return fault("range [\(lo):\(hi)] out of bounds", at) }
            var out = String.UnicodeScalarView()
            out.append(contentsOf: scalars[Int(lo)..<Int(hi)])
            return .string(String(out))
        case .path(let p):
            guard lo >= 0, lo <= hi, hi <= p.count else { return fault("range [\(lo):\(hi)] out of bounds", at) }
            return .path(Array(p[Int(lo)..<Int(hi)]))
        default: return fault("cannot take a range of \(v.typeName)", at)
        }
    }
}

extension RulesValue {
    var asDouble: Double? {
        switch self {
        case .int(let i): Double(i)
        case .float(let d): d
        default: nil
        }
    }
}
