public import SiloCore

/// Rules chosen by bucket: a bucket's own rules, else the rules for every bucket. A bucket with neither is refused
/// to everyone but the admin, as the Firebase emulator refuses a bucket that no deploy target names.
///
/// Fixed once built (``version`` 0): a reload or `PUT /internal/setRules` builds a new one and swaps it in whole, so
/// no request sees one bucket's new rules beside another's old ones.
public struct BucketRulesPolicy: AccessPolicy {
    public let fallback: RulesAccessPolicy?
    public let buckets: [BucketName: RulesAccessPolicy]

    public init(fallback: RulesAccessPolicy?, buckets: [BucketName: RulesAccessPolicy]) {
        self.fallback = fallback
        self.buckets = buckets
    }

    /// The rules that decide for `bucket`, if any.
    public func rules(for bucket: BucketName) -> RulesAccessPolicy? { buckets[bucket] ?? fallback }

    public func allows(_ request: AccessRequest) -> Bool { answer(request).allowed }

    public func answer(_ request: AccessRequest) -> AccessAnswer {
        if let rules = rules(for: request.bucket) { return rules.answer(request) }
        return AccessAnswer(allowed: request.principal?.isAdmin == true, byPathAlone: false)
    }

    public func answerWithoutWaiting(_ request: AccessRequest) -> AccessAnswer? {
        if let rules = rules(for: request.bucket) { return rules.answerWithoutWaiting(request) }
        return AccessAnswer(allowed: request.principal?.isAdmin == true, byPathAlone: false)
    }

    public var version: UInt64? { 0 }
}

/// One rules file and the bucket it is for (nil: every bucket without rules of its own).
public struct RulesSource: Sendable, Equatable {
    public var name: String
    public var content: String
    public var bucket: BucketName?

    public init(name: String, content: String, bucket: BucketName? = nil) {
        self.name = name
        self.content = content
        self.bucket = bucket
    }
}

/// A rules file that did not compile, with the compiler's diagnostics.
public struct RulesSetError: Error, Sendable {
    public var name: String
    public var diagnostics: String
}

extension RulesSource {
    /// The policy of a set of rules files: one file for every bucket is a plain ``RulesAccessPolicy``; files for
    /// named buckets (with at most one for the rest) a ``BucketRulesPolicy``. Every file is compiled before any is
    /// used; the first that fails is thrown.
    public static func policy(
        _ sources: [RulesSource], statistics: RulesStatistics?
    ) throws(RulesSetError) -> any AccessPolicy {
        var fallback: RulesAccessPolicy?
        var buckets: [BucketName: RulesAccessPolicy] = [:]
        for source in sources {
            let program: RulesProgram
            do {
                program = try RulesProgram.compile(source: source.content, fileName: source.name)
            } catch {
                throw RulesSetError(name: source.name, diagnostics: error.formatted)
            }
            let policy = RulesAccessPolicy(program: program, statistics: statistics)
            if let bucket = source.bucket { buckets[bucket] = policy } else { fallback = policy }
        }
        if buckets.isEmpty, let fallback { return fallback }
        return BucketRulesPolicy(fallback: fallback, buckets: buckets)
    }
}
