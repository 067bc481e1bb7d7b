/// A thread-safe dictionary for values that never go stale (keyed by something immutable), bounded by entries and
/// by bytes: at most `capacity` entries whose `cost` adds up to at most `maxBytes` (a cache bounded by
/// count alone grew with whatever its entries held). When an insert would pass either bound it starts over:
/// cheaper than tracking recency on every hit, and a hot entry is back after one miss. An entry costing more than
/// a quarter of `maxBytes` is not kept. A capacity of 0 keeps nothing.
public final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var entries: [Key: Value] = [:]
        var bytes = 0
    }

    public let capacity: Int
    public let maxBytes: Int
    private let cost: @Sendable (Key, Value) -> Int
    private let state = BlockingMutex(State())

    /// - Parameter cost: the bytes an entry holds (its key and value, roughly: what it keeps alive).
    public init(capacity: Int, maxBytes: Int = .max, cost: @escaping @Sendable (Key, Value) -> Int = { _, _ in 0 }) {
        self.capacity = max(0, capacity)
        self.maxBytes = max(0, maxBytes)
        self.cost = cost
    }

    public func value(for key: Key) -> Value? {
        guard capacity > 0 else { return nil }
        return state.withLock { $0.entries[key] }
    }

    public func insert(_ value: Value, for key: Key) {
        guard capacity > 0 else { return }
        let bytes = cost(key, value)
        guard bytes <= maxBytes / 4 else { return }
        state.withLock { state in
            if let old = state.entries[key] { state.bytes -= cost(key, old) }
            if state.entries[key] == nil && state.entries.count >= capacity || state.bytes + bytes > maxBytes {
                state.entries.removeAll(keepingCapacity: true)
                state.bytes = 0
            }
            state.entries[key] = value
            state.bytes += bytes
        }
    }

    /// How many entries are kept now.
    public var count: Int { state.withLock { $0.entries.count } }
    /// The bytes the kept entries cost.
    public var bytes: Int { state.withLock { $0.bytes } }
}
