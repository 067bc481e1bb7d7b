#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Global and namespace functions. Arity was checked at compile time; argument errors were
/// propagated by the caller, except for `debug`.
enum Builtins {
    static func fault(_ m: String, _ at: Int) -> RulesValue { .error(RulesFault(m, offset: at)) }

    static func call(_ f: Builtin, _ args: [RulesValue], _ at: Int, _ interp: Interpreter) -> RulesValue {
        let x = args[0]
        switch f {
        case .int: return toInt(x, at)
        case .float:
            switch x {
            case .int(let i): return .float(Double(i))
            case .float: return x
            case .string(let s): return Double(s).map { .float($0) } ?? fault("cannot convert '\(s)' to float", at)
            default: return fault("cannot convert \(x.typeName) to float", at)
            }
        case .string: return toString(x, at)
        case .bool:
            switch x {
            case .bool: return x
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            default: return fault("cannot convert \(x.typeName) to bool", at)
            }
        case .path:
            guard case .string(let s) = x else { return fault("path() needs a string", at) }
            return .path(parsePath(s))
        case .debug:
            interp.debugLog?.append(describe(x))
            return x
        case .mathAbs:
            switch x {
            case .int(let i): return i == .min ? fault("integer overflow", at) : .int(abs(i))
            case .float(let d): return .float(abs(d))
            default: return fault("math.abs needs a number", at)
            }
        case .mathCeil, .mathFloor, .mathRound:
            guard let d = x.asDouble else { return fault("\(f.rawValue) needs a number", at) }
            if case .int = x { return x }
            let rule: FloatingPointRoundingRule =
                f == .mathCeil ? .up : (f == .mathFloor ? .down : .toNearestOrAwayFromZero)
            return int(fromDouble: d.rounded(rule), at)
        case .mathSqrt:
            guard let d = x.asDouble else { return fault("math.sqrt needs a number", at) }
            return .float(d.squareRoot())
        case .mathPow:
            guard let b = x.asDouble, let e = args[1].asDouble else { return fault("math.pow needs numbers", at) }
            return .float(pow(b, e))
        case .mathIsInfinite:
            guard let d = x.asDouble else { return fault("math.isInfinite needs a number", at) }
            return .bool(d.isInfinite)
        case .mathIsNaN:
            guard let d = x.asDouble else { return fault("math.isNaN needs a number", at) }
            return .bool(d.isNaN)
        case .durationValue: return durationValue(x, args[1], at)
        case .durationTime:
            var total = TimeValue(seconds: 0, nanos: 0)
            let scale: [Int64] = [3600, 60, 1]
            for (i, a) in args.enumerated() {
                guard case .int(let n) = a else { return fault("duration.time needs ints", at) }
                let part: TimeValue? =
                    i < 3
                    ? n.multipliedReportingOverflowValue(scale[i]).map { TimeValue(seconds: $0, nanos: 0) }
                    : TimeValue.make(seconds: 0, nanos: n)
                guard let part, let sum = Time.add(total, part) else { return fault("duration overflow", at) }
                total = sum
            }
            return .duration(total)
        case .durationAbs:
            guard case .duration(let d) = x else { return fault("duration.abs needs a duration", at) }
            if d.seconds >= 0 { return x }
            return Time.negate(d).map { .duration($0) } ?? fault("duration overflow", at)
        case .timestampDate:
            guard case .int(let y) = x, case .int(let m) = args[1], case .int(let d) = args[2] else {
                return fault("timestamp.date needs ints", at)
            }
            guard y >= 1, y <= 9999, m >= 1, m <= 12, d >= 1, d <= Time.daysInMonth(y, m) else {
                return fault("invalid date \(y)-\(m)-\(d)", at)
            }
            return .timestamp(TimeValue(seconds: Time.days(year: y, month: m, day: d) * 86_400, nanos: 0))
        case .timestampValue:
            guard case .int(let ms) = x else { return fault("timestamp.value needs epoch milliseconds", at) }
            let seconds = Time.floorDiv(ms, 1000)
            return Time.timestamp(TimeValue.make(seconds: seconds, nanos: (ms - seconds * 1000) * 1_000_000), at)
        case .latlngValue:
            guard let lat = x.asDouble, let lng = args[1].asDouble, lat >= -90, lat <= 90, lng >= -180, lng <= 180
            else { return fault("latlng.value needs latitude in [-90, 90] and longitude in [-180, 180]", at) }
            return .latlng(latitude: lat, longitude: lng)
        case .hashingCrc32, .hashingCrc32c, .hashingMd5, .hashingSha256:
            let data: [UInt8]
            switch x {
            case .string(let s): data = Array(s.utf8)
            case .bytes(let b): data = b
            default: return fault("\(f.rawValue) needs a string or bytes", at)
            }
            guard interp.charge(data.count / 16 + 1) else { return fault("work limit exceeded", at) }
            switch f {
            case .hashingCrc32: return .bytes(Hashing.crc32(data))
            case .hashingCrc32c: return .bytes(Hashing.crc32c(data))
            case .hashingMd5: return .bytes(Hashing.md5(data))
            default: return .bytes(Hashing.sha256(data))
            }
        case .firestoreGet, .firestoreExists:
            guard case .path(let p) = x else { return fault("\(f.rawValue) needs a path", at) }
            return interp.documents.call(exists: f == .firestoreExists, path: p, at: at, interp)
        }
    }

    static func parsePath(_ s: String) -> [String] {
        var text = Substring(s)
        if text.hasPrefix("/") { text = text.dropFirst() }
        if text.isEmpty { return [] }
        return text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    }

    static func int(fromDouble d: Double, _ at: Int) -> RulesValue {
        guard d.isFinite, d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else {
            return fault("\(d) does not fit in an int", at)
        }
        return .int(Int64(d))
    }

    static func toInt(_ x: RulesValue, _ at: Int) -> RulesValue {
        switch x {
        case .int: return x
        case .float(let d): return int(fromDouble: d.rounded(.towardZero), at)
        case .string(let s):
            // Strict base 10: optional '-', then digits only (`Int64("+1")` would accept a plus sign).
            guard !s.hasPrefix("+"), let v = Int64(s) else { return fault("cannot convert '\(s)' to int", at) }
            return .int(v)
        default: return fault("cannot convert \(x.typeName) to int", at)
        }
    }

    static func toString(_ x: RulesValue, _ at: Int) -> RulesValue {
        switch x {
        case .string: return x
        case .null: return .string("null")
        case .bool(let b): return .string(b ? "true" : "false")
        case .int(let i): return .string(String(i))
        case .float(let d): return .string(formatDouble(d))
        case .path(let p): return .string(p.joined(separator: "/"))
        case .timestamp(let t): return .string(Time.rfc3339(t))
        case .duration(let d):
            let (s, n) = Time.signedParts(d)
            return .string(n == 0 ? "\(s)s" : formatDouble(Double(s) + Double(n) / 1e9) + "s")
        default: return fault("cannot convert \(x.typeName) to string", at)
        }
    }

    /// Shortest round-trip digits with a fractional part always shown (`2.0`).
    static func formatDouble(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return d.description
    }

    static func durationValue(_ n: RulesValue, _ unit: RulesValue, _ at: Int) -> RulesValue {
        guard case .string(let u) = unit else { return fault("duration unit must be a string", at) }
        let nanosPerUnit: Int64
        switch u {
        case "w": nanosPerUnit = 604_800_000_000_000
        case "d": nanosPerUnit = 86_400_000_000_000
        case "h": nanosPerUnit = 3_600_000_000_000
        case "m": nanosPerUnit = 60_000_000_000
        case "s": nanosPerUnit = 1_000_000_000
        case "ms": nanosPerUnit = 1_000_000
        case "ns": nanosPerUnit = 1
        default: return fault("unknown duration unit '\(u)'", at)
        }
        switch n {
        case .int(let count):
            // Split into whole seconds and remaining nanos to stay within Int64 for large counts.
            if nanosPerUnit >= 1_000_000_000 {
                guard let s = count.multipliedReportingOverflowValue(nanosPerUnit / 1_000_000_000) else {
                    return fault("duration overflow", at)
                }
                return .duration(TimeValue(seconds: s, nanos: 0))
            }
            let perSecond = 1_000_000_000 / nanosPerUnit
            let seconds = Time.floorDiv(count, perSecond)
            return TimeValue.make(seconds: seconds, nanos: (count - seconds * perSecond) * nanosPerUnit)
                .map { .duration($0) } ?? fault("duration overflow", at)
        case .float(let d):
            let total = d * Double(nanosPerUnit) / 1e9
            guard total.isFinite, abs(total) < 9e18 else { return fault("duration overflow", at) }
            let seconds = total.rounded(.down)
            return TimeValue.make(seconds: Int64(seconds), nanos: Int64(((total - seconds) * 1e9).rounded()))
                .map { .duration($0) } ?? fault("duration overflow", at)
        default: return fault("duration.value needs a number", at)
        }
    }

    /// Debug output: a compact literal-like rendering.
    static func describe(_ v: RulesValue) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .float(let d): return formatDouble(d)
        case .string(let s): return "'" + s + "'"
        case .bytes(let b): return "b'" + b.map { "\\x" + String($0, radix: 16) }.joined() + "'"
        case .duration, .timestamp:
            if case .string(let s) = toString(v, -1) { return s }
            return v.typeName
        case .path(let p): return "/" + p.joined(separator: "/")
        case .list(let l): return "[" + l.map(describe).joined(separator: ", ") + "]"
        case .set(let l): return "set(" + l.map(describe).joined(separator: ", ") + ")"
        case .map(let m):
            return "{" + m.keys.sorted().map { "'\($0)': " + describe(m[$0]!) }.joined(separator: ", ") + "}"
        case .mapDiff(let l, let r): return "diff(" + describe(.map(l)) + ", " + describe(.map(r)) + ")"
        case .latlng(let a, let o): return "latlng(\(a), \(o))"
        case .error(let f): return "error(\(f.message))"
        }
    }
}
