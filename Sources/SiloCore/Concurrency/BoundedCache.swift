/// A thread-safe dictionary for values that never go stale (keyed by something immutable), bounded by entries and
/// by bytes: at most `capacity` entries whose `cost` adds up to at most `maxBytes` (a cache bounded by
/// count alone grew with whatever its entries held). Past either bound it evicts with CLOCK (``ClockTable``), so
/// entries that are hit stay while one-off lookups come and go. An entry costing more than a quarter of `maxBytes` is
/// not kept. A capacity of 0 keeps nothing.
public final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public let capacity: Int
    public let maxBytes: Int
    private let cost: @Sendable (Key, Value) -> Int
    private let table: BlockingMutex<ClockTable<Key, Value>>

    /// - Parameter cost: the bytes an entry holds (its key and value, roughly: what it keeps alive).
    public init(capacity: Int, maxBytes: Int = .max, cost: @escaping @Sendable (Key, Value) -> Int = { _, _ in 0 }) {
        self.capacity = max(0, capacity)
        self.maxBytes = max(0, maxBytes)
        self.cost = cost
        table = BlockingMutex(ClockTable(capacity: self.capacity, maxBytes: self.maxBytes))
    }

    /// `waiting: false` is for a thread that must never sleep (an event loop): a lock another thread holds is then
    /// a miss.
    public func value(for key: Key, waiting: Bool = true) -> Value? {
        guard capacity > 0 else { return nil }
        if waiting { return table.withLock { $0.value(for: key) } }
        return table.withLockIfAvailable { $0.value(for: key) } ?? nil
    }

    /// `waiting: false`: a lock another thread holds leaves the value out.
    public func insert(_ value: Value, for key: Key, waiting: Bool = true) {
        guard capacity > 0 else { return }
        let bytes = cost(key, value)
        guard bytes <= maxBytes / 4 else { return }
        if waiting {
            table.withLock { $0.insert(value, for: key, cost: bytes) }
        } else {
            table.withLockIfAvailable { $0.insert(value, for: key, cost: bytes) }
        }
    }

    /// How many entries are kept now.
    public var count: Int { table.withLock { $0.count } }
    /// The bytes the kept entries cost.
    public var bytes: Int { table.withLock { $0.bytes } }
}
