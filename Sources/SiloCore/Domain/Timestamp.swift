/// A UTC instant with microsecond precision, formatted the way Firebase and GCS clients parse it.
public struct Timestamp: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }

    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(microseconds: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.microseconds < b.microseconds }
    public var description: String { rfc3339 }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, exactly three fraction digits (iOS and Android parse only this shape).
    public var rfc3339: String {
        let (y, mo, d, h, mi, s, ms) = components
        // Built as bytes: every metadata response carries two or three of these.
        var out = [UInt8]()
        out.reserveCapacity(24)
        appendPadded(y, 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendPadded(mo, 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendPadded(d, 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendPadded(h, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(mi, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(s, 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendPadded(ms, 3, to: &out)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3339 with three fraction digits, or six when the time has microseconds: for times a client wrote
    /// (`customTime`, retention times), which must read back at the precision they were set.
    public var rfc3339Precise: String {
        let micros = Int(microseconds - floorDiv(microseconds, 1000) * 1000)
        guard micros != 0 else { return rfc3339 }
        var text = rfc3339
        text.removeLast()  // the Z
        let extra = String(micros)
        return text + String(repeating: "0", count: 3 - extra.count) + extra + "Z"
    }

    /// RFC 1123 (`Sun, 06 Nov 1994 08:49:37 GMT`) for `Last-Modified`.
    public var rfc1123: String {
        let (y, mo, d, h, mi, s, _) = components
        let days = floorDiv(floorDiv(microseconds, 1_000_000), 86_400)
        let weekday = Int((days % 7 + 7 + 4) % 7)  // 1970-01-01 was a Thursday
        // Built as bytes: every download response carries one.
        var out = [UInt8]()
        out.reserveCapacity(29)
        out.append(contentsOf: "SunMonTueWedThuFriSat".utf8.dropFirst(weekday * 3).prefix(3))
        out.append(contentsOf: ", ".utf8)
        appendPadded(d, 2, to: &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: "JanFebMarAprMayJunJulAugSepOctNovDec".utf8.dropFirst((mo - 1) * 3).prefix(3))
        out.append(UInt8(ascii: " "))
        appendPadded(y, 4, to: &out)
        out.append(UInt8(ascii: " "))
        appendPadded(h, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(mi, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(s, 2, to: &out)
        out.append(contentsOf: " GMT".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses an HTTP date in its preferred form, IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7),
    /// the form every client sends in `If-Modified-Since`; nil for anything else (the caller then ignores the field,
    /// as RFC 9110 §13.1.3 asks).
    public init?(httpDate text: String) {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20, b[19] == 0x3A,
            b[22] == 0x3A, b[25] == 0x20, b[26] == 0x47, b[27] == 0x4D, b[28] == 0x54
        else { return nil }
        func num(_ from: Int, _ count: Int) -> Int? {
            var v = 0
            for i in from..<(from + count) {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            return v
        }
        let months = Array("JanFebMarAprMayJunJulAugSepOctNovDec".utf8)
        guard let monthIndex = stride(from: 0, to: 36, by: 3).first(where: { months[$0..<($0 + 3)] == b[8..<11] }),
            let d = num(5, 2), let y = num(12, 4), let h = num(17, 2), let mi = num(20, 2), let s = num(23, 2),
            (1...31).contains(d), h < 24, mi < 60, s < 61
        else { return nil }
        let days = Timestamp.daysFromCivil(y, monthIndex / 3 + 1, d)
        self.microseconds = (Int64(days) * 86_400 + Int64(h * 3600 + mi * 60 + s)) * 1_000_000
    }

    /// Parses RFC 3339 with any number of fraction digits and `Z` or a numeric offset.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), b[4] == 0x2D, let mo = num(5, 2), b[7] == 0x2D, let d = num(8, 2),
            b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20, let h = num(11, 2), b[13] == 0x3A, let mi = num(14, 2),
            b[16] == 0x3A, let s = num(17, 2), (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61
        else { return nil }
        var i = 19
        var micros = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if digits < 6 { micros = micros * 10 + Int(b[i] - 0x30) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 6)..<6 { micros *= 10 }
        }
        var offsetSeconds = 0
        guard i < b.count else { return nil }
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D, let oh = num(i + 1, 2), b.count > i + 3, b[i + 3] == 0x3A,
            let om = num(i + 4, 2)
        {
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == 0x2D ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Timestamp.daysFromCivil(y, mo, d)
        let seconds = Int64(days) * 86_400 + Int64(h * 3600 + mi * 60 + s) - Int64(offsetSeconds)
        self.microseconds = seconds * 1_000_000 + Int64(micros)
    }

    private var components: (Int, Int, Int, Int, Int, Int, Int) {
        let seconds = floorDiv(microseconds, 1_000_000)
        let ms = Int((microseconds - seconds * 1_000_000) / 1000)
        let days = floorDiv(seconds, 86_400)
        let secOfDay = Int(seconds - days * 86_400)
        let (y, m, d) = Timestamp.civilFromDays(Int(days))
        return (y, m, d, secOfDay / 3600, (secOfDay % 3600) / 60, secOfDay % 60, ms)
    }

    // Howard Hinnant's days-from-civil algorithms (public domain), proleptic Gregorian calendar.
    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

/// Appends `pad(value, width)`'s bytes; the usual case (a non-negative value that fits) without making Strings.
private func appendPadded(_ value: Int, _ width: Int, to out: inout [UInt8]) {
    var limit = 1
    for _ in 0..<width { limit *= 10 }
    guard value >= 0 && value < limit else {
        out.append(contentsOf: pad(value, width).utf8)
        return
    }
    var divisor = limit / 10
    while divisor > 0 {
        out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
        divisor /= 10
    }
}

private func pad(_ value: Int, _ width: Int) -> String {
    let s = String(value)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
