import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes of recently downloaded small blobs, by blob id, up to a byte budget (oldest evicted first).
///
/// A blob's bytes never change once an object version refers to it, and blob ids are random and never reused, so
/// an entry cannot go stale: at worst it outlives its blob, and then nothing asks for that id again. A hit saves
/// the open, fstat, pread and close of a small download (4 of its 9 system calls).
///
/// Lookups share a reader-writer lock: with many request threads on few cores, a `Mutex` here was the hottest
/// symbol in `perf` (10% of server CPU spinning in `_lockSlow` while a preempted holder kept the lock).
/// `@unchecked Sendable`: `state` is only touched with `lock` held (shared for reads, exclusive for writes).
final class SmallBlobCache: @unchecked Sendable {
    private struct State {
        var entries: [BlobID: [UInt8]] = [:]
        /// Insertion order; `order[head...]` are the live entries' ids.
        var order: [BlobID] = []
        var head = 0
        var bytes = 0
    }

    /// Entries larger than this are not kept.
    let maxEntryBytes: Int
    let capacityBytes: Int
    /// Unchecked: touched only under `lock`, which makes the accesses exclusive already (see ``BlockingMutex``).
    @exclusivity(unchecked) private var state = State()
    /// A miss on an event loop is not counted: the request goes on to a worker, which looks again and counts it.
    let lookups = CacheCounters()
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    init(capacityBytes: Int, maxEntryBytes: Int) {
        self.capacityBytes = capacityBytes
        self.maxEntryBytes = maxEntryBytes
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    func bytes(_ id: BlobID) -> [UInt8]? {
        guard capacityBytes > 0 else { return nil }
        pthread_rwlock_rdlock(lock)
        let found = state.entries[id]
        pthread_rwlock_unlock(lock)
        if found != nil {
            lookups.hit()
        } else if InlineAttempt.current == nil {
            lookups.miss()
        }
        return found
    }

    func insert(_ id: BlobID, _ bytes: [UInt8]) {
        guard bytes.count <= maxEntryBytes, bytes.count <= capacityBytes else { return }
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        guard state.entries.updateValue(bytes, forKey: id) == nil else { return }
        state.order.append(id)
        state.bytes += bytes.count
        while state.bytes > capacityBytes && state.head < state.order.count {
            let oldest = state.order[state.head]
            state.head += 1
            state.bytes -= state.entries.removeValue(forKey: oldest)?.count ?? 0
        }
        if state.head > 1024 && state.head * 2 > state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }
}
