#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a reader-writer lock (`pthread_rwlock_t`): readers share it, a writer has it alone, and a waiting
/// thread sleeps. For lookups on every request that many threads make at once and that rarely write; with a
/// `Mutex` there, `perf` showed 10% of server CPU spinning in `_lockSlow` while a preempted holder kept the lock.
///
/// `@unchecked Sendable`: `value` is read only under the read or the write lock and written only under the write lock.
public final class ReadWriteLock<Value>: @unchecked Sendable {
    /// Unchecked: the lock already orders every access (see ``BlockingMutex``).
    @exclusivity(unchecked) private var value: Value
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    public init(_ value: Value) {
        self.value = value
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    public func withReadLock<Result>(_ body: (Value) throws -> Result) rethrows -> Result {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    /// `body` under the read lock unless a writer holds the lock, else nil at once: for a thread that must never
    /// sleep (an event loop), which treats a held lock as a miss.
    public func withReadLockIfAvailable<Result>(_ body: (Value) throws -> Result) rethrows -> Result? {
        guard pthread_rwlock_tryrdlock(lock) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    public func withWriteLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value)
    }
}
