/// Something that reports metrics when `/metrics` is scraped: the server's own counters, a store's cache, the rules
/// engine, the event outbox. A source is asked on the scraping request's worker thread, never on an event loop, so it
/// may take a lock or ask its store (cheaply: a scrape comes every few seconds, a count is fine, a scan is not).
public protocol MetricsSource: Sendable {
    /// Appends this source's families. Each family's name is written once per scrape: sources own disjoint names.
    func collect(into text: inout MetricsText)
}

/// The Prometheus text exposition format, version 0.0.4: `# HELP` and `# TYPE` per family, then one line per sample,
/// `name{label="value",...} value`. Label values are escaped here (`\`, `"`, newline), so a source passes values as
/// they are; label names and metric names are the sources' own constants.
public struct MetricsText: Sendable {
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    public private(set) var bytes: [UInt8] = []

    public init() { bytes.reserveCapacity(16 << 10) }

    /// The content type a scraper expects for this format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Starts a family: its help text (one line) and kind.
    public mutating func family(_ name: String, _ kind: Kind, help: String) {
        append("# HELP \(name) ")
        for byte in help.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): append("\\\\")
            case UInt8(ascii: "\n"): append("\\n")
            default: bytes.append(byte)
            }
        }
        append("\n# TYPE \(name) \(kind.rawValue)\n")
    }

    /// One sample without labels.
    public mutating func sample(_ name: String, _ value: UInt64) { sample(name, [:], value) }
    public mutating func sample(_ name: String, _ value: Int64) { sample(name, [:], value) }
    public mutating func sample(_ name: String, _ value: Double) { sample(name, [:], value) }

    /// One sample of an integer value.
    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: UInt64) {
        head(name, labels)
        append(String(value))
        bytes.append(UInt8(ascii: "\n"))
    }

    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Int64) {
        head(name, labels)
        append(String(value))
        bytes.append(UInt8(ascii: "\n"))
    }

    /// One sample of a real value (`+Inf`, `-Inf` and `NaN` as the format spells them).
    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        head(name, labels)
        append(Self.format(value))
        bytes.append(UInt8(ascii: "\n"))
    }

    /// A histogram's samples from its per-bucket counts (not cumulative; `counts.count == bounds.count + 1`, the
    /// last for values above every bound): `_bucket` lines with cumulative counts and `le`, then `_sum` and
    /// `_count`. Cumulating here makes the buckets monotonic by construction, whatever a concurrent writer does.
    public mutating func histogram(
        _ name: String, _ labels: KeyValuePairs<String, String>, bounds: [Double], counts: [UInt64], sum: Double
    ) {
        precondition(counts.count == bounds.count + 1, "a histogram needs one count per bound and one above them")
        var cumulative: UInt64 = 0
        for (index, count) in counts.enumerated() {
            cumulative &+= count
            head(name + "_bucket", labels, extra: ("le", index < bounds.count ? Self.format(bounds[index]) : "+Inf"))
            append(String(cumulative))
            bytes.append(UInt8(ascii: "\n"))
        }
        sample(name + "_sum", labels, sum)
        sample(name + "_count", labels, cumulative)
    }

    private mutating func head(_ name: String, _ labels: KeyValuePairs<String, String>, extra: (String, String)? = nil)
    {
        append(name)
        guard !labels.isEmpty || extra != nil else {
            bytes.append(UInt8(ascii: " "))
            return
        }
        bytes.append(UInt8(ascii: "{"))
        var first = true
        func label(_ key: String, _ value: String) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            append(key)
            append("=\"")
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): append("\\\\")
                case UInt8(ascii: "\""): append("\\\"")
                case UInt8(ascii: "\n"): append("\\n")
                default: bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
        for (key, value) in labels { label(key, value) }
        if let (key, value) = extra { label(key, value) }
        append("} ")
    }

    private mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
