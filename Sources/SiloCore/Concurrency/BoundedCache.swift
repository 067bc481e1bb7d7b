/// A thread-safe dictionary of at most `capacity` entries for values that never go stale (keyed by something
/// immutable). When full it starts over: cheaper than tracking recency on every hit, and a hot entry is back after
/// one miss. A capacity of 0 keeps nothing.
public final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public let capacity: Int
    private let entries = BlockingMutex([Key: Value]())

    public init(capacity: Int) { self.capacity = max(0, capacity) }

    public func value(for key: Key) -> Value? {
        guard capacity > 0 else { return nil }
        return entries.withLock { $0[key] }
    }

    public func insert(_ value: Value, for key: Key) {
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity && entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }

    /// How many entries are kept now.
    public var count: Int { entries.withLock { $0.count } }
}
