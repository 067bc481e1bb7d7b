/// GCS-style generation and metageneration preconditions. Stores check them inside the write transaction.
public struct Preconditions: Sendable, Equatable, Codable {
    /// `0` means "the object must not exist".
    public var ifGenerationMatch: Int64?
    public var ifGenerationNotMatch: Int64?
    public var ifMetagenerationMatch: Int64?
    public var ifMetagenerationNotMatch: Int64?

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
    }
}
