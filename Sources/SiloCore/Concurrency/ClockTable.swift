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
    /// A slot's state: free, kept, or kept and hit since the hand last passed it.
    private enum Mark: UInt8 {
        case free, kept, referenced
    }

    public let capacity: Int
    public let maxBytes: Int
    private var index: [Key: Int] = [:]
    // The slots as parallel arrays rather than one array of optional structs: a hit only sets its mark, so it
    // neither copies nor writes back the key and the value (with `[Slot?]`, `slots[i]!.referenced = true` copied the
    // whole slot out and in: a tenth of a small GET's instructions went to the three caches' lookups).
    private var keys: [Key?] = []
    private var values: [Value?] = []
    private var costs: [Int] = []
    private var marks: [Mark] = []
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
        marks[slot] = .referenced
        return values[slot]
    }

    /// The value for `key` without marking it used.
    public func peek(_ key: Key) -> Value? {
        index[key].flatMap { values[$0] }
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
            keys[slot] = key
            values[slot] = value
            costs[slot] = cost
            marks[slot] = .kept
        } else {
            slot = keys.count
            keys.append(key)
            values.append(value)
            costs.append(cost)
            marks.append(.kept)
        }
        index[key] = slot
        bytes += cost
    }

    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key) else { return nil }
        return release(slot)
    }

    public mutating func removeAll() {
        index.removeAll(keepingCapacity: true)
        keys.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
        costs.removeAll(keepingCapacity: true)
        marks.removeAll(keepingCapacity: true)
        free.removeAll(keepingCapacity: true)
        hand = 0
        bytes = 0
    }

    /// Frees `slot` (already out of the index); returns the value it held.
    @discardableResult
    private mutating func release(_ slot: Int) -> Value? {
        let gone = values[slot]
        keys[slot] = nil
        values[slot] = nil
        marks[slot] = .free
        free.append(slot)
        bytes -= costs[slot]
        return gone
    }

    /// Evicts one entry; the table must not be empty. At most two sweeps: the first clears every mark it passes.
    private mutating func evictOne() {
        while true {
            if hand >= marks.count { hand = 0 }
            let at = hand
            hand += 1
            switch marks[at] {
            case .free:
                continue
            case .referenced:
                marks[at] = .kept
            case .kept:
                if let key = keys[at] { index.removeValue(forKey: key) }
                release(at)
                return
            }
        }
    }
}
