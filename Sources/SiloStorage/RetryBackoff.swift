import Foundation

/// Retry timing within one of Storage's retry-time budgets, as a pure value (tests drive it with explicit times).
///
/// Delays start at 1 s and double up to a cap derived from the budget the way Firebase derives it: the last of the
/// doubling intervals 1, 2, 4, … whose running sum reaches the budget (10 s → 8 s, 120 s → 64 s, 600 s → 512 s).
/// A retry is allowed only if it would start before the budget is used up.
struct RetryBackoff: Sendable, Equatable {
    let budget: TimeInterval
    let cap: TimeInterval
    private(set) var nextDelay: TimeInterval
    private(set) var attempts = 0

    init(budget: TimeInterval, initialDelay: TimeInterval = 1) {
        self.budget = budget
        self.cap = RetryBackoff.cap(for: budget)
        self.nextDelay = initialDelay
    }

    static func cap(for budget: TimeInterval) -> TimeInterval {
        var interval: TimeInterval = 1
        var sum: TimeInterval = 0
        while true {
            sum += interval
            if sum >= budget { return interval }
            interval *= 2
        }
    }

    /// The delay before the next attempt after a failure at `elapsed` seconds since the operation started, or nil
    /// when the budget does not allow another attempt. `retryAfter` (a server's `Retry-After`) overrides the delay.
    mutating func delay(elapsed: TimeInterval, retryAfter: TimeInterval? = nil) -> TimeInterval? {
        let delay = retryAfter.map { max(0, $0) } ?? min(nextDelay, cap)
        guard elapsed + delay <= budget else { return nil }
        nextDelay = min(nextDelay * 2, cap)
        attempts += 1
        return delay
    }

    /// HTTP statuses worth retrying: those Firebase's Apple SDK retries (408, 502, 503, 504).
    static func isRetryable(status: Int) -> Bool { [408, 502, 503, 504].contains(status) }

    /// Transport failures worth retrying: timeouts and lost or missing connectivity.
    static func isRetryable(_ error: any Error) -> Bool {
        if error is CancellationError { return false }
        if let storage = error as? StorageError {
            guard case .unknown(_, let info) = storage, let underlying = info[NSUnderlyingErrorKey] as? any Error else {
                return false
            }
            return isRetryable(underlying)
        }
        let ns = error as NSError
        guard ns.domain == NSURLErrorDomain else { return false }
        return [NSURLErrorTimedOut, NSURLErrorNetworkConnectionLost, NSURLErrorNotConnectedToInternet].contains(ns.code)
    }
}
