#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The IMF-fixdate of RFC 9110 5.6.7, formatted by hand (no locale, no allocation beyond the result).
enum HTTPDate {
    /// `Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n` for `seconds` since the epoch.
    static func headerLine(_ seconds: Int) -> [UInt8] {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days: [StaticString] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months: [StaticString] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ]
        var line: [UInt8] = []
        line.reserveCapacity(40)
        append("Date: ", to: &line)
        append(days[Int(parts.tm_wday) % 7], to: &line)
        append(", ", to: &line)
        appendTwoDigits(Int(parts.tm_mday), to: &line)
        line.append(0x20)
        append(months[Int(parts.tm_mon) % 12], to: &line)
        line.append(0x20)
        appendDecimal(Int(parts.tm_year) + 1900, to: &line)
        line.append(0x20)
        appendTwoDigits(Int(parts.tm_hour), to: &line)
        line.append(0x3A)
        appendTwoDigits(Int(parts.tm_min), to: &line)
        line.append(0x3A)
        appendTwoDigits(Int(parts.tm_sec), to: &line)
        append(" GMT\r\n", to: &line)
        return line
    }

    private static func append(_ literal: StaticString, to line: inout [UInt8]) {
        line.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private static func appendDecimal(_ value: Int, to line: inout [UInt8]) {
        line.append(contentsOf: String(value).utf8)
    }

    private static func appendTwoDigits(_ value: Int, to line: inout [UInt8]) {
        line.append(UInt8(0x30 + (value / 10) % 10))
        line.append(UInt8(0x30 + value % 10))
    }
}
