import Synchronization

/// Turns an `Authorization` header into a ``Principal``. Nil means anonymous; a credential that is present but
/// not acceptable throws a ``StorageError`` with code `.unauthenticated` (HTTP 401).
public protocol CredentialVerifier: Sendable {
    /// `time` is when the credential is judged: now for ordinary requests, the session's start for the chunks of
    /// a resumable upload (iOS sends no credential on chunks; the start request's one stands for them).
    func authenticate(authorizationHeader: String?, at time: Timestamp) throws -> Principal?

    /// The signer of a request that carries its credential in its query (a GCS V4 or V2 signed URL). Nil when the
    /// signature cannot be checked here and need not be (no key registered, emulator mode); throws a
    /// ``StorageError`` when the URL is refused — expired, malformed, or signed for a different request.
    func authenticate(signedRequest: SignedRequest, at time: Timestamp) throws -> Principal?
}

extension CredentialVerifier {
    /// Verifiers that know no signing keys refuse signed URLs rather than serving them unchecked.
    public func authenticate(signedRequest: SignedRequest, at time: Timestamp) throws -> Principal? {
        throw StorageError(.permissionDenied, "signed URLs are not accepted by this server")
    }
}

/// The parts of a request a URL signature covers, as the transport received them.
public struct SignedRequest: Sendable {
    public var method: String
    /// The path exactly as sent, still percent-encoded.
    public var rawPath: String
    /// Query parameters, decoded, in the order sent.
    public var query: [(name: String, value: String)]
    /// Header fields as sent (names in any case; repeated names appear repeatedly).
    public var headers: [(name: String, value: String)]
    /// The hosts the server takes for its own for this request, which a signature's `host` may name: the request's
    /// `Host` only once the server has checked that it names this server, never merely because the request says so.
    /// The verifier adds the hosts it is configured with.
    public var hosts: [String]

    public init(
        method: String, rawPath: String, query: [(name: String, value: String)],
        headers: [(name: String, value: String)], hosts: [String] = []
    ) {
        self.method = method
        self.rawPath = rawPath
        self.query = query
        self.headers = headers
        self.hosts = hosts
    }

    /// Whether the query carries a V4 (`X-Goog-Signature`, `X-Goog-Algorithm`) or V2 (`GoogleAccessId` with
    /// `Signature`) URL signature.
    public var isSigned: Bool {
        query.contains { ["x-goog-signature", "x-goog-algorithm", "x-goog-credential"].contains($0.name.lowercased()) }
            || (query.contains { $0.name == "GoogleAccessId" } && query.contains { $0.name == "Signature" })
    }
}

/// An access policy that can be replaced while requests run (rules reloaded on SIGHUP or when the file changes).
///
/// Every request reads the current policy, so the lock is a ``BlockingMutex``: with more request threads than cores
/// a spinning `Mutex` here burned a third of the server's CPU in `perf` whenever its holder was preempted.
public final class SwappableAccessPolicy: AccessPolicy {
    private let current: BlockingMutex<any AccessPolicy>
    /// ``version`` without the lock: the count of replacements times two, plus one while the policy in force is
    /// not a fixed one (its own version is not 0). Stored after the swap, under the lock: a reader that saw the
    /// old value may have used either policy, and its answer is then already out of date.
    private let generation: Atomic<UInt64>

    public init(_ initial: any AccessPolicy) {
        current = BlockingMutex(initial)
        generation = Atomic(initial.version == 0 ? 0 : 1)
    }

    public func replace(with policy: any AccessPolicy) {
        let fixed = policy.version == 0
        current.withLock {
            $0 = policy
            let replaced = generation.load(ordering: .relaxed) >> 1 &+ 1
            generation.store(replaced << 1 | (fixed ? 0 : 1), ordering: .releasing)
        }
    }

    /// The policy in force now (the console's rules playground explains its decisions).
    public var policy: any AccessPolicy { current.withLock { $0 } }

    public func allows(_ request: AccessRequest) -> Bool {
        // Evaluate outside the lock: a reload never waits for rule evaluation, nor evaluation for a reload.
        let policy = current.withLock { $0 }
        return policy.allows(request)
    }

    public func answer(_ request: AccessRequest) -> AccessAnswer {
        let policy = current.withLock { $0 }
        return policy.answer(request)
    }

    /// Nil while another thread holds the lock (a reader taking its reference, or a swap).
    public func answerWithoutWaiting(_ request: AccessRequest) -> AccessAnswer? {
        guard let policy = current.withLockIfAvailable({ $0 }) else { return nil }
        return policy.answerWithoutWaiting(request)
    }

    /// Changes with every replacement; nil while the policy in force is not a fixed one.
    public var version: UInt64? {
        let value = generation.load(ordering: .acquiring)
        return value & 1 == 0 ? value : nil
    }
}
