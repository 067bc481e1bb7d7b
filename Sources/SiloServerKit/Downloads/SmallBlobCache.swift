import SiloCore

/// The bytes of recently downloaded small blobs, by blob id, up to a byte budget (oldest evicted first).
///
/// A blob's bytes never change once an object version refers to it, and blob ids are random and never reused, so
/// an entry cannot go stale: at worst it outlives its blob, and then nothing asks for that id again. A hit saves
/// the open, fstat, pread and close of a small download (4 of its 9 system calls).
///
/// Lookups share a reader-writer lock (``ReadWriteLock``): many request threads read it at once.
final class SmallBlobCache: Sendable {
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
    private let state = ReadWriteLock(State())
    /// A miss on a socket thread is not counted: the request goes on to a worker, which looks again and counts it.
    let lookups = CacheCounters()

    init(capacityBytes: Int, maxEntryBytes: Int) {
        self.capacityBytes = capacityBytes
        self.maxEntryBytes = maxEntryBytes
    }

    /// The blob's bytes if they are kept. `waiting: false` is for a socket thread, which must not sleep: a lock a
    /// writer holds is then a miss (not counted), and the request goes on to a worker, which waits and counts.
    func bytes(_ id: BlobID, waiting: Bool) -> [UInt8]? {
        guard capacityBytes > 0 else { return nil }
        let found =
            waiting
            ? state.withReadLock { $0.entries[id] } : state.withReadLockIfAvailable { $0.entries[id] } ?? nil
        if found != nil {
            lookups.hit()
        } else if waiting {
            lookups.miss()
        }
        return found
    }

    func insert(_ id: BlobID, _ bytes: [UInt8]) {
        guard bytes.count <= maxEntryBytes, bytes.count <= capacityBytes else { return }
        state.withWriteLock { state in
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
}
