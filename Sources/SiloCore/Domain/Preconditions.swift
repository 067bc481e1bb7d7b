/// GCS-style generation and metageneration preconditions. Stores check them inside the write transaction.
public struct Preconditions: Sendable, Equatable, Codable {
    /// `0` means "the object must not exist".
    public var ifGenerationMatch: Int64?
    public var ifGenerationNotMatch: Int64?
    public var ifMetagenerationMatch: Int64?
    public var ifMetagenerationNotMatch: Int64?
    /// Set on writes that replace or delete a version: the store refuses (403) one under a hold or a retention,
    /// inside the same transaction as the other conditions.
    public var protection: Protection?

    /// What keeps a version from being deleted or replaced: holds, object retention, the bucket's retention period.
    public struct Protection: Sendable, Equatable, Codable {
        public var now: Timestamp
        /// The bucket's retention period in seconds (0: none).
        public var retentionSeconds: Int64

        public init(now: Timestamp, retentionSeconds: Int64) {
            self.now = now
            self.retentionSeconds = retentionSeconds
        }

        public func check(_ record: ObjectRecord, describing object: String) throws {
            let extras = record.fields.extras
            if extras.isHeld {
                let kind = extras.eventBasedHold == true ? "Event-Based hold" : "Temporary hold"
                throw StorageError(
                    .permissionDenied,
                    "Object '\(object)' is under active \(kind) and cannot be deleted, overwritten or archived until "
                        + "hold is removed.")
            }
            let bucketExpiry = record.timeCreated.microseconds + retentionSeconds * 1_000_000
            let objectExpiry = extras.retainUntil?.microseconds ?? 0
            if max(bucketExpiry, objectExpiry) > now.microseconds {
                let until = Timestamp(microseconds: max(bucketExpiry, objectExpiry))
                throw StorageError(
                    .permissionDenied,
                    "Object '\(object)' is subject to bucket's retention policy or object retention and cannot be "
                        + "deleted or overwritten until \(until.rfc3339)")
            }
        }
    }

    public init(
        ifGenerationMatch: Int64? = nil, ifGenerationNotMatch: Int64? = nil, ifMetagenerationMatch: Int64? = nil,
        ifMetagenerationNotMatch: Int64? = nil
    ) {
        self.ifGenerationMatch = ifGenerationMatch
        self.ifGenerationNotMatch = ifGenerationNotMatch
        self.ifMetagenerationMatch = ifMetagenerationMatch
        self.ifMetagenerationNotMatch = ifMetagenerationNotMatch
    }

    public static let none = Preconditions()
    public var isEmpty: Bool { self == .none }

    /// These conditions, also refusing to replace or delete a protected version.
    public func protecting(_ protection: Protection?) -> Preconditions {
        var copy = self
        copy.protection = protection
        return copy
    }

    /// Throws `.preconditionFailed` unless `current` (the live version, or nil when absent) satisfies every condition.
    public func check(_ current: ObjectRecord?, describing object: String) throws {
        let generation = current?.generation ?? 0
        func fail() -> StorageError {
            StorageError(
                .preconditionFailed, "At least one of the pre-conditions you specified did not hold: \(object)")
        }
        if let want = ifGenerationMatch, want != generation { throw fail() }
        if let avoid = ifGenerationNotMatch, avoid == generation { throw fail() }
        if let want = ifMetagenerationMatch {
            guard let current, current.metageneration == want else { throw fail() }
        }
        if let avoid = ifMetagenerationNotMatch, let current, current.metageneration == avoid { throw fail() }
        if let protection, let current { try protection.check(current, describing: object) }
    }
}
