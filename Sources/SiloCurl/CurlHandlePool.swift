import Synchronization

/// Idle easy handles kept for reuse, each with whatever connections libcurl left open in it.
///
/// A handle is in the pool or checked out by exactly one transfer, never both, so no two threads touch one. That
/// is why this class may hold non-Sendable `CurlEasy` values and still be Sendable: `idle` is only read or changed
/// under `lock`, and a handle leaves the locked region only after being removed from `idle`.
final class CurlHandlePool: @unchecked Sendable {
    private let lock = Mutex(())
    private var idle: [CurlEasy] = []
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// An idle handle, or nil when there is none (the caller makes a new one).
    func checkOut() -> CurlEasy? {
        lock.withLock { _ in idle.popLast() }
    }

    /// Returns a handle after its transfer. It is reset at once, so no idle handle keeps pointers to the finished
    /// transfer's context or header list; beyond `capacity` idle handles it is freed instead (closing its
    /// connections).
    func checkIn(_ handle: CurlEasy) {
        guard (try? handle.reset()) != nil else { return }
        lock.withLock { _ in
            if idle.count < capacity { idle.append(handle) }
        }
    }
}
