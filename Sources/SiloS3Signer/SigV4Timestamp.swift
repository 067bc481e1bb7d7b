/// The instant a request is signed, as SigV4 writes it: `YYYYMMDD'T'HHMMSS'Z'` (UTC) and its date part.
public struct SigV4Timestamp: Sendable, Equatable {
    /// `20130524T000000Z`.
    public let dateTime: String
    /// `20130524`.
    public var date: String { String(dateTime.prefix(8)) }

    /// From seconds since 1970-01-01T00:00:00Z.
    public init(secondsSince1970 seconds: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        dateTime =
            Self.pad(year, 4) + Self.pad(month, 2) + Self.pad(day, 2) + "T" + Self.pad(secondOfDay / 3600, 2)
            + Self.pad(secondOfDay / 60 % 60, 2) + Self.pad(secondOfDay % 60, 2) + "Z"
    }

    /// Proleptic Gregorian year, month and day of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
