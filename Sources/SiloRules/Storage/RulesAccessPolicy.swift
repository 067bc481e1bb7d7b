public import SiloCore

/// The rules engine behind the server's `AccessPolicy` seam.
public struct RulesAccessPolicy: AccessPolicy {
    public let program: RulesProgram
    public let documents: (any DocumentSource)?
    public let listChildMode: Bool
    /// Decisions that depended on the operation and path alone (`allow read: if true`, `if false`, wildcards
    /// only), so a public object is not evaluated again on every download. Lives as long as these rules: a reload
    /// builds a new policy.
    public let pathDecisions: PathDecisionCache
    /// Where decisions are counted; shared by the policies of successive reloads, so counters survive them.
    public let statistics: RulesStatistics?

    public init(
        program: RulesProgram, documents: (any DocumentSource)? = nil, listChildMode: Bool = false,
        pathDecisionCapacity: Int = 4096, statistics: RulesStatistics? = nil
    ) {
        self.program = program
        self.documents = documents
        self.listChildMode = listChildMode
        self.pathDecisions = PathDecisionCache(capacity: pathDecisionCapacity)
        self.statistics = statistics
    }

    /// Admin credentials bypass rules entirely; everything else is decided by the program.
    public func allows(_ request: AccessRequest) -> Bool { answer(request).allowed }

    public func answer(_ request: AccessRequest) -> AccessAnswer {
        known(request, waiting: true) ?? evaluated(request, waiting: true)
    }

    /// Nil when the decision would wait: on the path-decision cache's lock, or on a document read (`firestore.get`
    /// reads a store, so rules that may read one are evaluated where waiting is allowed).
    public func answerWithoutWaiting(_ request: AccessRequest) -> AccessAnswer? {
        known(request, waiting: false) ?? (documents == nil ? evaluated(request, waiting: false) : nil)
    }

    /// The answer without evaluating: the admin's, or a decision remembered by path.
    private func known(_ request: AccessRequest, waiting: Bool) -> AccessAnswer? {
        if request.principal?.isAdmin == true { return AccessAnswer(allowed: true, byPathAlone: false) }
        guard let known = pathDecisions.decision(request, waiting: waiting) else { return nil }
        statistics?.count(evaluated: false, allowed: known, errors: 0)
        return AccessAnswer(allowed: known, byPathAlone: true)
    }

    private func evaluated(_ request: AccessRequest, waiting: Bool) -> AccessAnswer {
        let decision = program.evaluate(
            request, documents: documents, options: .init(trace: false, explain: false, listChildMode: listChildMode))
        if decision.dependsOnlyOnPath { pathDecisions.remember(decision.allowed, for: request, waiting: waiting) }
        // Before an upload's bytes arrive, only a certain denial refuses it (it is decided again at commit).
        let allowed = decision.allowed || (!request.bytesKnown && decision.undetermined)
        statistics?.count(evaluated: true, allowed: allowed, errors: decision.errors)
        return AccessAnswer(allowed: allowed, byPathAlone: decision.dependsOnlyOnPath && allowed == decision.allowed)
    }

    /// A program never changes: a reload builds a new policy.
    public var version: UInt64? { 0 }

    /// The full decision with a reason (and optionally a trace), for logging denials.
    public func decide(_ request: AccessRequest, trace: Bool = false) -> RulesDecision {
        if request.principal?.isAdmin == true {
            return RulesDecision(allowed: true, reason: "allowed: admin credential", trace: [], expressionsEvaluated: 0)
        }
        return program.evaluate(
            request, documents: documents, options: .init(trace: trace, explain: true, listChildMode: listChildMode))
    }
}

/// Rules decisions by (operation, bucket, path), for decisions that read nothing else.
public final class PathDecisionCache: Sendable {
    /// Paths compare by bytes, as the rules compare strings: `String`'s own `==` would make "café" (NFC) and
    /// "cafe\u{301}" (NFD), two objects the rules may treat differently, one key.
    private struct Key: Hashable {
        var operation: AccessRequest.Operation
        var bucket: BucketName
        var path: String

        static func == (a: Key, b: Key) -> Bool {
            a.operation == b.operation && a.path.hasSameUTF8Bytes(as: b.path) && a.bucket == b.bucket
        }

        /// Not the bucket: a deployment has few, and `==` resolves what the path leaves (one SipHash pass less).
        func hash(into hasher: inout Hasher) {
            hasher.combine(operation)
            let utf8 = path.utf8
            if utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
                for byte in utf8 { hasher.combine(byte) }
            }
        }
    }

    private let entries: BoundedCache<Key, Bool>

    public init(capacity: Int, maxBytes: Int = 4 << 20) {
        entries = BoundedCache(capacity: capacity, maxBytes: maxBytes) { key, _ in
            64 + key.bucket.rawValue.utf8.count + key.path.utf8.count
        }
    }

    /// How many decisions are remembered (for tests).
    public var count: Int { entries.count }

    /// `waiting: false`: a lock another thread holds is a miss (``BoundedCache/value(for:waiting:)``).
    func decision(_ request: AccessRequest, waiting: Bool) -> Bool? {
        entries.value(
            for: Key(operation: request.operation, bucket: request.bucket, path: request.path), waiting: waiting)
    }

    func remember(_ allowed: Bool, for request: AccessRequest, waiting: Bool) {
        entries.insert(
            allowed, for: Key(operation: request.operation, bucket: request.bucket, path: request.path),
            waiting: waiting)
    }
}
