/// Turns an `Authorization` header into a ``Principal``. Nil means anonymous; a credential that is present but
/// not acceptable throws a ``StorageError`` with code `.unauthenticated` (HTTP 401).
public protocol CredentialVerifier: Sendable {
    /// `time` is when the credential is judged: now for ordinary requests, the session's start for the chunks of
    /// a resumable upload (iOS sends no credential on chunks; the start request's one stands for them).
    func authenticate(authorizationHeader: String?, at time: Timestamp) throws -> Principal?
}

/// An access policy that can be replaced while requests run (rules reloaded on SIGHUP or when the file changes).
///
/// Every request reads the current policy, so the lock is a ``BlockingMutex``: with more request threads than cores
/// a spinning `Mutex` here burned a third of the server's CPU in `perf` whenever its holder was preempted.
public final class SwappableAccessPolicy: AccessPolicy {
    private let current: BlockingMutex<any AccessPolicy>

    public init(_ initial: any AccessPolicy) { current = BlockingMutex(initial) }

    public func replace(with policy: any AccessPolicy) { current.withLock { $0 = policy } }

    public func allows(_ request: AccessRequest) -> Bool {
        // Evaluate outside the lock: a reload never waits for rule evaluation, nor evaluation for a reload.
        let policy = current.withLock { $0 }
        return policy.allows(request)
    }
}
