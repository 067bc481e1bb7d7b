/// Calendar arithmetic for timestamps and durations, proleptic Gregorian in UTC.
enum Time {
    /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the representable timestamp range.
    static let minSeconds: Int64 = -62_135_596_800
    static let maxSeconds: Int64 = 253_402_300_799

    static func add(_ a: TimeValue, _ b: TimeValue) -> TimeValue? {
        guard let s = a.seconds.addingReportingOverflowValue(b.seconds) else { return nil }
        return TimeValue.make(seconds: s, nanos: Int64(a.nanos) + Int64(b.nanos))
    }

    static func negate(_ a: TimeValue) -> TimeValue? {
        guard a.seconds != .min else { return nil }
        return TimeValue.make(seconds: -a.seconds, nanos: -Int64(a.nanos))
    }

    /// A timestamp value, or ⊥ if the instant is outside years 1–9999.
    static func timestamp(_ t: TimeValue?, _ at: Int) -> RulesValue {
        guard let t, t.seconds >= minSeconds, t.seconds <= maxSeconds else {
            return .error(RulesFault("timestamp out of range", offset: at))
        }
        return .timestamp(t)
    }

    /// Days since 1970-01-01 for a civil date (Gregorian, any year).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d)
    }

    static func isLeap(_ y: Int64) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: isLeap(y) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    static func components(_ t: TimeValue) -> (
        year: Int64, month: Int64, day: Int64, secondOfDay: Int64, dayNumber: Int64
    ) {
        let dayNumber = floorDiv(t.seconds, 86_400)
        let (y, m, d) = civil(days: dayNumber)
        return (y, m, d, t.seconds - dayNumber * 86_400, dayNumber)
    }

    /// RFC 3339 with nanoseconds trimmed to the shortest of 0, 3, 6 or 9 digits.
    static func rfc3339(_ t: TimeValue) -> String {
        let c = components(t)
        func pad(_ v: Int64, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        var out =
            pad(c.year, 4) + "-" + pad(c.month, 2) + "-" + pad(c.day, 2) + "T" + pad(c.secondOfDay / 3600, 2) + ":"
            + pad(c.secondOfDay / 60 % 60, 2) + ":" + pad(c.secondOfDay % 60, 2)
        if t.nanos != 0 {
            var digits = pad(Int64(t.nanos), 9)
            while digits.count > 3 && digits.hasSuffix("000") { digits.removeLast(3) }
            out += "." + digits
        }
        return out + "Z"
    }

    /// Protobuf-style signed components of a duration: seconds truncated toward zero, nanos with the same sign.
    static func signedParts(_ d: TimeValue) -> (seconds: Int64, nanos: Int64) {
        if d.seconds < 0 && d.nanos > 0 { return (d.seconds + 1, Int64(d.nanos) - 1_000_000_000) }
        return (d.seconds, Int64(d.nanos))
    }
}
