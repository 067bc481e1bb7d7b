#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex that puts a waiting thread to sleep at once (`pthread_mutex_t`), for locks taken on every request.
///
/// `Synchronization.Mutex` spins before it sleeps. With more request threads than cores, the thread holding a lock
/// is often preempted, and the waiters then spin away their time slices: `perf` on `silo serve` (8 threads pinned
/// to one core, 64 connections) showed 44% of the server's CPU in `Mutex._lockSlow` around the SQLite reader pool,
/// and a small GET costing 90 µs of CPU instead of 17. Sleeping hands the core straight back to the holder.
///
/// `@unchecked Sendable`: `value` is only read or written with `mutex` held.
public final class BlockingMutex<Value>: @unchecked Sendable {
    /// Unchecked: the mutex already makes every access exclusive, so the dynamic check (a thread-local access set,
    /// some hundred instructions per `withLock`, several locks per request) could find nothing.
    @exclusivity(unchecked) private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init(_ value: Value) {
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// `body` under the lock if no other thread holds it, else nil at once: for a thread that must never sleep
    /// (an event loop), which treats a held lock as a miss and leaves the work to a thread that may wait.
    public func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
