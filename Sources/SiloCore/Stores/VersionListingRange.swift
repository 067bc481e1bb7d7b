/// The index range a listing of object versions (live, noncurrent or soft-deleted) walks in a store that keeps them
/// ordered by (bucket, name bytes, generation): names in `lower..<upper`, and past `after`.
public struct VersionListingRange: Sendable {
    /// Where the walk starts: the larger of the prefix and the name of `after`, so a page deep into a big prefix
    /// seeks straight to its key instead of walking every version before it.
    public var lower: [UInt8]
    /// Past every name that starts with the prefix.
    public var upper: [UInt8]
    /// The last version already listed; only versions after it are wanted (the key's own name's earlier
    /// generations are what the range start alone lets through).
    public var after: ObjectVersionKey

    public init(prefix: String, startAfter: ObjectVersionKey?) {
        let prefixBytes = Array(prefix.utf8)
        // No valid UTF-8 contains 0xFF, so every name starting with the prefix sorts below prefix + 0xFF.
        upper = ObjectName.keyAfterAllNames(startingWith: prefixBytes)
        // Names are never empty, so (empty, Int64.min) is before every version.
        after = startAfter ?? ObjectVersionKey(name: [], generation: .min)
        lower = prefixBytes.lexicographicallyPrecedes(after.name) ? after.name : prefixBytes
    }
}
