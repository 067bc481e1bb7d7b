import SiloHTTP
import SiloTesting
import Testing

/// One sample of a `/metrics` answer.
struct MetricSample: Equatable {
    var name: String
    var labels: [String: String]
    var value: Double
}

/// The samples of a Prometheus text answer, in order; `# ` lines give the families. A line that does not parse
/// fails the test (and is returned as nil in `samples`).
struct ScrapedMetrics {
    var samples: [MetricSample] = []
    /// `# TYPE` lines: family name → kind.
    var types: [String: String] = [:]
    /// Lines that were neither comments nor samples.
    var malformed: [String] = []

    init(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { types[String(parts[2])] = String(parts[3]) } else { malformed.append(line) }
                continue
            }
            if line.hasPrefix("#") { continue }
            if let sample = Self.parse(line) { samples.append(sample) } else { malformed.append(line) }
        }
    }

    /// `name{k="v",...} value` with `\\`, `\"` and `\n` escapes in values.
    static func parse(_ line: String) -> MetricSample? {
        let bytes = Array(line.utf8)
        var index = 0
        while index < bytes.count, bytes[index] != UInt8(ascii: "{"), bytes[index] != UInt8(ascii: " ") { index += 1 }
        let name = String(decoding: bytes[0..<index], as: UTF8.self)
        var labels: [String: String] = [:]
        if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
            index += 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "}") {
                let keyStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "=") { index += 1 }
                let key = String(decoding: bytes[keyStart..<index], as: UTF8.self)
                index += 1
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
                index += 1
                var value: [UInt8] = []
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
                        index += 1
                        value.append(bytes[index] == UInt8(ascii: "n") ? 0x0A : bytes[index])
                    } else {
                        value.append(bytes[index])
                    }
                    index += 1
                }
                guard index < bytes.count else { return nil }
                index += 1
                labels[key] = String(decoding: value, as: UTF8.self)
                if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 }
            }
            guard index < bytes.count else { return nil }
            index += 1
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: " ") else { return nil }
        let text = String(decoding: bytes[(index + 1)...], as: UTF8.self)
        let value: Double? =
            switch text {
            case "+Inf": .infinity
            case "-Inf": -.infinity
            default: Double(text)
            }
        guard let value, !name.isEmpty else { return nil }
        return MetricSample(name: name, labels: labels, value: value)
    }

    /// The value of the one sample named `name` whose labels include `labels`; 0 when there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let matching = samples.filter { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }
        return matching.reduce(0) { $0 + $1.value }
    }
}

extension HTTPTestClient {
    func scrape(headers: HTTPHeaders = [:]) throws -> ScrapedMetrics {
        let response = try send(method: "GET", target: "/metrics", headers: headers)
        #expect(response.status == 200, "GET /metrics answered \(response.status): \(response.text)")
        return ScrapedMetrics(response.text)
    }
}
