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

    /// Statuses 100...599, one slot each per label pair (the server answers only statuses it chose).
    private static let statusSlots = 500
    private static let labelPairs = RouteLabel.allCases.count * APILabel.allCases.count
    /// Per label pair: the buckets (bounds + 1), the sum of durations in µs, bytes in, bytes out.
    private static let perPair = bounds.count + 1 + 3

    private let statuses = AtomicCounters(count: labelPairs * statusSlots)
    private let series = AtomicCounters(count: labelPairs * perPair)

    @inline(__always)
    private static func pair(_ api: APILabel, _ route: RouteLabel) -> Int {
        route.rawValue * APILabel.allCases.count + api.rawValue
    }

    /// One finished request. `bytesIn`/`bytesOut` nil: not counted (a batch's calls, whose bytes the batch counts).
    func record(
        api: APILabel, route: RouteLabel, status: Int, micros: UInt64, bytesIn: Int64?, bytesOut: Int64?
    ) {
        let pair = Self.pair(api, route)
        statuses.add(pair * Self.statusSlots + (min(max(status, 100), 599) - 100))
        var bucket = 0
        let bounds = Self.boundsMicros
        let buckets = bounds.count
        while bucket < buckets && micros > bounds[bucket] { bucket += 1 }
        let base = pair * Self.perPair
        series.add(base + bucket)
        series.add(base + buckets + 1, micros)
        if let bytesIn, bytesIn > 0 { series.add(base + buckets + 2, UInt64(bytesIn)) }
        if let bytesOut, bytesOut > 0 { series.add(base + buckets + 3, UInt64(bytesOut)) }
    }

    /// Requests recorded so far for one label set (tests compare it with the requests they made).
    func requests(api: APILabel, route: RouteLabel, status: Int) -> UInt64 {
        statuses[Self.pair(api, route) * Self.statusSlots + status - 100]
    }

    func collect(into text: inout MetricsText) {
        text.family(
            "silo_http_requests_total", .counter,
            help: "Requests answered, by API (v0, json, xml, other), route and status code (class: 2xx ... 5xx).")
        for route in RouteLabel.allCases {
            for api in APILabel.allCases {
                let base = Self.pair(api, route) * Self.statusSlots
                for slot in 0..<Self.statusSlots {
                    let count = statuses[base + slot]
                    guard count > 0 else { continue }
                    let code = slot + 100
                    text.sample(
                        "silo_http_requests_total",
                        ["api": api.name, "route": route.name, "code": String(code), "class": "\(code / 100)xx"],
                        count)
                }
            }
        }
        let active = activePairs()
        text.family(
            "silo_http_request_duration_seconds", .histogram,
            help: "Time from the request head to the answer handed to the transport (a streamed body's sending is "
                + "not included), by API and route.")
        for (api, route, base) in active {
            let counts = (0...Self.bounds.count).map { series[base + $0] }
            text.histogram(
                "silo_http_request_duration_seconds", ["api": api.name, "route": route.name], bounds: Self.bounds,
                counts: counts, sum: Double(series[base + Self.bounds.count + 1]) / 1_000_000)
        }
        text.family(
            "silo_http_request_body_bytes_total", .counter, help: "Request body bytes received, by API and route.")
        for (api, route, base) in active {
            text.sample(
                "silo_http_request_body_bytes_total", ["api": api.name, "route": route.name],
                series[base + Self.bounds.count + 2])
        }
        text.family(
            "silo_http_response_body_bytes_total", .counter,
            help: "Response body bytes declared (Content-Length) by answers, by API and route; chunked bodies of "
                + "unknown length are not counted.")
        for (api, route, base) in active {
            text.sample(
                "silo_http_response_body_bytes_total", ["api": api.name, "route": route.name],
                series[base + Self.bounds.count + 3])
        }
    }

    /// The label pairs that have seen a request.
    private func activePairs() -> [(APILabel, RouteLabel, Int)] {
        var pairs: [(APILabel, RouteLabel, Int)] = []
        for route in RouteLabel.allCases {
            for api in APILabel.allCases {
                let base = Self.pair(api, route) * Self.perPair
                if (0...Self.bounds.count).contains(where: { series[base + $0] > 0 }) {
                    pairs.append((api, route, base))
                }
            }
        }
        return pairs
    }

    /// Monotonic microseconds, for durations (`CLOCK_MONOTONIC` is read without a system call).
    @inline(__always)
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec / 1000)
    }
}
