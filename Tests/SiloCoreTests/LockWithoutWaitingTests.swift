import Foundation
import SiloCore
import Testing

/// The locks' non-waiting forms, which an event loop uses: a lock another thread holds is an immediate nil, never a
/// wait; a free one runs the body as the waiting form does.
@Suite struct LockWithoutWaitingTests {
    @Test func aMutexHeldElsewhereIsNilAtOnce() {
        let mutex = BlockingMutex(1)
        #expect(mutex.withLockIfAvailable { $0 } == 1)
        let (held, release, done) = (
            DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
        )
        Thread.detachNewThread {
            mutex.withLock { _ in
                held.signal()
                release.wait()
            }
            done.signal()
        }
        held.wait()
        #expect(mutex.withLockIfAvailable { $0 } == nil)
        release.signal()
        done.wait()
        #expect(
            mutex.withLockIfAvailable {
                $0 += 1
                return $0
            } == 2)
    }

    @Test func aReadLockWaitsForNoReaderAndForNoWriter() {
        let lock = ReadWriteLock(7)
        let (held, release, done) = (
            DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
        )
        // Another reader: readers share the lock.
        Thread.detachNewThread {
            lock.withReadLock { _ in
                held.signal()
                release.wait()
            }
            done.signal()
        }
        held.wait()
        #expect(lock.withReadLockIfAvailable { $0 } == 7)
        release.signal()
        done.wait()
        // A writer: the non-waiting reader gets nil at once.
        Thread.detachNewThread {
            lock.withWriteLock { value in
                value = 8
                held.signal()
                release.wait()
            }
            done.signal()
        }
        held.wait()
        #expect(lock.withReadLockIfAvailable { $0 } == nil)
        release.signal()
        done.wait()
        #expect(lock.withReadLockIfAvailable { $0 } == 8)
        #expect(lock.withReadLock { $0 } == 8)
    }
}
