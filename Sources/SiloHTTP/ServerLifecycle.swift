#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What every ``HTTPServer`` does the same way, whatever drives its sockets.
public enum ServerLifecycle {
    /// The bind address as `inet_pton` takes it: `localhost` is `127.0.0.1`, and a bracketed IPv6 literal
    /// (`[::1]`) loses its brackets.
    public static func normalizedHost(_ host: String) -> String {
        if host == "localhost" { return "127.0.0.1" }
        if host.hasPrefix("[") && host.hasSuffix("]") { return String(host.dropFirst().dropLast()) }
        return host
    }

    /// Waits (polling every 2 ms) until `inFlight` reports no request in flight or `timeout` seconds have passed;
    /// returns how many were still in flight.
    public static func drain(timeout: Double, inFlight: () -> Int) -> Int {
        let deadline = monotonicSeconds() + max(0, timeout)
        while inFlight() > 0 && monotonicSeconds() < deadline {
            usleep(2_000)
        }
        return inFlight()
    }

    private static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
