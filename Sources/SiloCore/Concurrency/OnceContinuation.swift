import Synchronization

/// Resumes the one caller of a callback-based operation exactly once, with whichever comes first: the operation's
/// own outcome or a cancel. Either may arrive before the caller has even suspended, so the outcome is kept until the
/// continuation is attached (both HTTP clients, libcurl's and URLSession's, hand their results over this way).
public final class OnceContinuation<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var outcome: Result<Value, any Error>?
    }
    private let state = Mutex(State())

    public init() {}

    /// Stores the continuation and returns true, or, if the outcome is already known (cancelled early), resumes it
    /// with that outcome and returns false: then the operation must not be started.
    public func attach(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        let outcome: Result<Value, any Error>? = state.withLock {
            if let outcome = $0.outcome { return outcome }
            $0.continuation = continuation
            return nil
        }
        guard let outcome else { return true }
        continuation.resume(with: outcome)
        return false
    }

    /// Whether an outcome has been given (the caller is resumed, or will be as soon as it attaches).
    public var isFinished: Bool { state.withLock { $0.outcome != nil } }

    /// Resumes the caller with `outcome`; every later call is ignored.
    public func finish(_ outcome: Result<Value, any Error>) {
        let continuation: CheckedContinuation<Value, any Error>? = state.withLock { s in
            guard s.outcome == nil else { return nil }
            s.outcome = outcome
            defer { s.continuation = nil }
            return s.continuation
        }
        continuation?.resume(with: outcome)
    }
}
