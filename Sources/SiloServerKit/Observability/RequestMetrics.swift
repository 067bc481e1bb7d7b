import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Per-request counters: requests by API, route and status; a latency histogram and bytes in and out by API and
/// route. Every slot is allocated up front (``AtomicCounters``), so recording a request is a few relaxed atomic adds
/// and no lock or allocation: it runs on event loops for inline answers.
final class RequestMetrics: Sendable {
    /// Upper bounds of the latency buckets, in seconds: from a cache hit answered on the loop (tens of µs) to a
    /// large upload (a minute); one more bucket above the last.
    static let bounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
    ]
    private static let boundsMicros: [UInt64] = bounds.map { UInt64(($0 * 1_000_000).rounded()) }

    /// Statuses 100...599, one slot each per label (the server answers only statuses it chose).
    private static let statusSlots = 500
    /// Per label: the buckets (bounds + 1), the sum of durations in µs, bytes in, bytes out.
    private static let perLabel = bounds.count + 1 + 3

    private let statuses = AtomicCounters(count: RouteLabel.capacity * statusSlots)
    private let series = AtomicCounters(count: RouteLabel.capacity * perLabel)

    /// One finished request. `bytesIn`/`bytesOut` nil: not counted (a batch's calls, whose bytes the batch counts).
    func record(_ label: RouteLabel, status: Int, micros: UInt64, bytesIn: Int64?, bytesOut: Int64?) {
        statuses.add(label.index * Self.statusSlots + (min(max(status, 100), 599) - 100))
        var bucket = 0
        let bounds = Self.boundsMicros
        let buckets = bounds.count
        while bucket < buckets && micros > bounds[bucket] { bucket += 1 }
        let base = label.index * Self.perLabel
        series.add(base + bucket)
        series.add(base + buckets + 1, micros)
        if let bytesIn, bytesIn > 0 { series.add(base + buckets + 2, UInt64(bytesIn)) }
        if let bytesOut, bytesOut > 0 { series.add(base + buckets + 3, UInt64(bytesOut)) }
    }

    /// Requests recorded so far under one label and status (tests compare it with the requests they made).
    func requests(_ label: RouteLabel, status: Int) -> UInt64 {
        statuses[label.index * Self.statusSlots + status - 100]
    }

    func collect(into text: inout MetricsText) {
        let labels = Self.labelsInOrder()
        text.family(
            "silo_http_requests_total", .counter,
            help: "Requests answered, by API (v0, json, xml, other), route and status code (class: 2xx ... 5xx).")
        for (index, api, route) in labels {
            let base = index * Self.statusSlots
            for slot in 0..<Self.statusSlots {
                let count = statuses[base + slot]
                guard count > 0 else { continue }
                let code = slot + 100
                text.sample(
                    "silo_http_requests_total",
                    ["api": api, "route": route, "code": String(code), "class": "\(code / 100)xx"], count)
            }
        }
        let active = labels.filter { label in
            (0...Self.bounds.count).contains { series[label.index * Self.perLabel + $0] > 0 }
        }
        text.family(
            "silo_http_request_duration_seconds", .histogram,
            help: "Time from the request head to the answer handed to the transport (a streamed body's sending is "
                + "not included), by API and route.")
        for (index, api, route) in active {
            let base = index * Self.perLabel
            let counts = (0...Self.bounds.count).map { series[base + $0] }
            text.histogram(
                "silo_http_request_duration_seconds", ["api": api, "route": route], bounds: Self.bounds,
                counts: counts, sum: Double(series[base + Self.bounds.count + 1]) / 1_000_000)
        }
        text.family(
            "silo_http_request_body_bytes_total", .counter, help: "Request body bytes received, by API and route.")
        for (index, api, route) in active {
            text.sample(
                "silo_http_request_body_bytes_total", ["api": api, "route": route],
                series[index * Self.perLabel + Self.bounds.count + 2])
        }
        text.family(
            "silo_http_response_body_bytes_total", .counter,
            help: "Response body bytes declared (Content-Length) by answers, by API and route; chunked bodies of "
                + "unknown length are not counted.")
        for (index, api, route) in active {
            text.sample(
                "silo_http_response_body_bytes_total", ["api": api, "route": route],
                series[index * Self.perLabel + Self.bounds.count + 3])
        }
    }

    /// Every declared label with its slot, by API then route: labels are numbered in the order the code first
    /// touched them, which no reader should see.
    private static func labelsInOrder() -> [(index: Int, api: String, route: String)] {
        RouteLabel.names.enumerated().map { ($0.offset, $0.element.api, $0.element.route) }
            .sorted { ($0.api, $0.route) < ($1.api, $1.route) }
    }

    /// Monotonic microseconds, for durations (`CLOCK_MONOTONIC` is read without a system call).
    @inline(__always)
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec / 1000)
    }
}
