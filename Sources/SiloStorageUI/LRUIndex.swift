/// Least-recently-used order over keys with byte costs, bounded by a total. Amortised O(1): each use appends to a
/// queue and marks the key's newest position; eviction pops from the front, skipping positions a later use made
/// stale. The queue is compacted when stale positions outnumber live ones, so it stays within twice the key count.
struct LRUIndex<Key: Hashable & Sendable>: Sendable {
    private var ticks: [Key: (tick: UInt64, cost: Int)] = [:]
    private var queue: [(tick: UInt64, key: Key)] = []
    private var head = 0
    private var clock: UInt64 = 0
    private(set) var totalCost = 0

    var count: Int { ticks.count }
    func contains(_ key: Key) -> Bool { ticks[key] != nil }

    /// Marks `key` used now, with `cost` (replacing an earlier cost).
    mutating func use(_ key: Key, cost: Int) {
        clock += 1
        totalCost += cost - (ticks[key]?.cost ?? 0)
        ticks[key] = (clock, cost)
        queue.append((clock, key))
        compactIfNeeded()
    }

    /// Marks `key` used now, keeping its cost; false when it is not held.
    @discardableResult
    mutating func touch(_ key: Key) -> Bool {
        guard let cost = ticks[key]?.cost else { return false }
        use(key, cost: cost)
        return true
    }

    mutating func remove(_ key: Key) {
        if let old = ticks.removeValue(forKey: key) { totalCost -= old.cost }
    }

    /// Removes least-recently-used keys until the total is at most `limit`; returns them, oldest first.
    mutating func evict(toFit limit: Int) -> [Key] {
        var evicted: [Key] = []
        while totalCost > limit, head < queue.count {
            let (tick, key) = queue[head]
            head += 1
            guard let live = ticks[key], live.tick == tick else { continue }
            ticks.removeValue(forKey: key)
            totalCost -= live.cost
            evicted.append(key)
        }
        compactIfNeeded()
        return evicted
    }

    private mutating func compactIfNeeded() {
        guard queue.count - head > 2 * ticks.count + 16 else { return }
        queue = queue[head...].filter { ticks[$0.key]?.tick == $0.tick }
        head = 0
    }
}
