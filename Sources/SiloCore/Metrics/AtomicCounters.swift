import Synchronization

/// A fixed number of 64-bit counters, each an atomic, allocated once: what request threads (event loops included)
/// bump on every request without a lock or an allocation. Relaxed ordering for metrics: a counter orders nothing
/// else, and a scrape that reads one a moment early or late is still a valid sample; change counters that order
/// what preceded them use ``addReleasing(_:)`` and ``loadAcquiring(_:)``.
///
/// `@unchecked Sendable`: the storage is only reached through `Atomic` operations, and lives as long as the object.
public final class AtomicCounters: @unchecked Sendable {
    public let count: Int
    private let storage: UnsafeMutablePointer<Atomic<UInt64>>

    public init(count: Int) {
        precondition(count > 0, "an empty counter array is a bug")
        self.count = count
        storage = .allocate(capacity: count)
        for index in 0..<count { (storage + index).initialize(to: Atomic(0)) }
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    @inline(__always)
    public func add(_ index: Int, _ amount: UInt64 = 1) {
        precondition(index >= 0 && index < count, "counter index out of range")
        storage[index].wrappingAdd(amount, ordering: .relaxed)
    }

    @inline(__always)
    public subscript(index: Int) -> UInt64 {
        precondition(index >= 0 && index < count, "counter index out of range")
        return storage[index].load(ordering: .relaxed)
    }

    /// An add that orders what preceded it before the new count, for a reader of ``loadAcquiring(_:)`` that relies
    /// on it (a change counter, not a metric).
    @inline(__always)
    public func addReleasing(_ index: Int) {
        precondition(index >= 0 && index < count, "counter index out of range")
        storage[index].wrappingAdd(1, ordering: .releasing)
    }

    @inline(__always)
    public func loadAcquiring(_ index: Int) -> UInt64 {
        precondition(index >= 0 && index < count, "counter index out of range")
        return storage[index].load(ordering: .acquiring)
    }
}

/// A source's cache lookups: hits and misses, for a hit ratio a scraper computes (`hits / (hits + misses)`).
public final class CacheCounters: Sendable {
    private let counters = AtomicCounters(count: 2)

    public init() {}

    @inline(__always) public func hit() { counters.add(0) }
    @inline(__always) public func miss() { counters.add(1) }
    public var hits: UInt64 { counters[0] }
    public var misses: UInt64 { counters[1] }

    /// `silo_cache_lookups_total{cache=NAME,result=hit|miss}`: every cache writes its samples under one family, which
    /// the server's registry starts once (``familyHeader(_:)``): the format wants a family's lines together.
    public func collect(cache name: String, into text: inout MetricsText) {
        text.sample(Self.family, ["cache": name, "result": "hit"], hits)
        text.sample(Self.family, ["cache": name, "result": "miss"], misses)
    }

    public static let family = "silo_cache_lookups_total"

    public static func familyHeader(_ text: inout MetricsText) {
        text.family(
            family, .counter,
            help: "Cache lookups by cache and result; hit ratio = hit / (hit + miss). A miss on the event loop that "
                + "goes on to a worker is counted once.")
    }
}
