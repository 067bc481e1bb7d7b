import Foundation
import Synchronization

/// The first level: decoded-nothing, just bytes, bounded by their total size, least recently used evicted first.
/// A `Mutex` rather than an actor so that a hit is answered without a suspension (an image view asks on the main
/// thread).
final class MemoryImageCache: Sendable {
    private struct State {
        var entries: [ImageCacheKey: ImageCacheEntry] = [:]
        var order = LRUIndex<ImageCacheKey>()
    }
    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int) { self.capacity = max(0, capacity) }

    func entry(_ key: ImageCacheKey) -> ImageCacheEntry? {
        state.withLock {
            guard let entry = $0.entries[key] else { return nil }
            $0.order.touch(key)
            return entry
        }
    }

    /// Stores `entry`, replacing any other generation of the same key. An entry larger than the whole capacity is
    /// not kept (it would evict everything and then itself).
    func store(_ entry: ImageCacheEntry) {
        state.withLock {
            guard entry.data.count <= capacity else {
                $0.entries.removeValue(forKey: entry.key)
                $0.order.remove(entry.key)
                return
            }
            $0.entries[entry.key] = entry
            $0.order.use(entry.key, cost: entry.data.count)
            for key in $0.order.evict(toFit: capacity) { $0.entries.removeValue(forKey: key) }
        }
    }

    func remove(_ key: ImageCacheKey) {
        state.withLock {
            $0.entries.removeValue(forKey: key)
            $0.order.remove(key)
        }
    }

    func removeAll() { state.withLock { $0 = State() } }

    /// Bytes held now.
    var totalBytes: Int { state.withLock { $0.order.totalCost } }
}
