/// A dictionary bounded by entries and by bytes that evicts with CLOCK (second chance): every entry has a bit that a
/// hit sets; the hand sweeps the slots, clears set bits and evicts the first entry whose bit is clear. Not
/// thread-safe: ``BoundedCache`` and ``CachingMetadataStore`` keep one behind their own lock.
///
/// Why not "evict whatever `Dictionary.startIndex` is": that removes from the lowest buckets only, so inserts (which
/// land anywhere) pile up in the high buckets, and linear probing there walks ever longer runs comparing keys. Over a
/// store much larger than the cache, where every lookup misses and evicts, that made the lookup the server's main
/// cost (docs/scaling.md, "Caches over large stores"). Here evictions fall on keys wherever they hash, so the
/// dictionary's load stays even, and each eviction is O(1) amortized (a bit is cleared at most once per hit).
///
/// A hot entry survives a stream of one-off lookups: the stream's entries are evicted on the hand's first pass,
/// the hot one only if it was not hit during a whole sweep.
public struct ClockTable<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        var value: Value
        var cost: Int
        var referenced: Bool
    }

    public let capacity: Int
    public let maxBytes: Int
    private var index: [Key: Int] = [:]
    private var slots: [Slot?] = []
    private var free: [Int] = []
    private var hand = 0
    /// The sum of the kept entries' costs.
    public private(set) var bytes = 0

    public init(capacity: Int, maxBytes: Int = .max) {
        self.capacity = max(0, capacity)
        self.maxBytes = max(0, maxBytes)
        index.reserveCapacity(min(self.capacity, 1 << 20))
    }

    public var count: Int { index.count }
    public var isEmpty: Bool { index.isEmpty }

    /// The value for `key`, marking it used.
    public mutating func value(for key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        slots[slot]!.referenced = true
        return slots[slot]!.value
    }

    /// The value for `key` without marking it used.
    public func peek(_ key: Key) -> Value? {
        index[key].map { slots[$0]!.value }
    }

    /// Keeps `value` for `key`, evicting until both bounds hold. An entry that alone passes `maxBytes`, or any entry
    /// when `capacity` is 0, is not kept (and an older value for `key` is dropped).
    public mutating func insert(_ value: Value, for key: Key, cost: Int) {
        removeValue(forKey: key)
        guard capacity > 0, cost <= maxBytes else { return }
        while !index.isEmpty && (index.count >= capacity || bytes + cost > maxBytes) { evictOne() }
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            slots[slot] = Slot(key: key, value: value, cost: cost, referenced: false)
        } else {
            slot = slots.count
            slots.append(Slot(key: key, value: value, cost: cost, referenced: false))
        }
        index[key] = slot
        bytes += cost
    }

    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key), let gone = slots[slot] else { return nil }
        slots[slot] = nil
        free.append(slot)
        bytes -= gone.cost
        return gone.value
    }

    public mutating func removeAll() {
        index.removeAll(keepingCapacity: true)
        slots.removeAll(keepingCapacity: true)
        free.removeAll(keepingCapacity: true)
        hand = 0
        bytes = 0
    }

    /// Evicts one entry; the table must not be empty. At most two sweeps: the first clears every bit it passes.
    private mutating func evictOne() {
        while true {
            if hand >= slots.count { hand = 0 }
            let at = hand
            hand += 1
            guard let slot = slots[at] else { continue }
            if slot.referenced {
                slots[at]!.referenced = false
                continue
            }
            index.removeValue(forKey: slot.key)
            slots[at] = nil
            free.append(at)
            bytes -= slot.cost
            return
        }
    }
}
