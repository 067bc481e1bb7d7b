import Foundation
import SiloCore
import Testing

/// The locks' non-waiting forms, which an event loop uses: a lock another thread holds is an immediate nil, never a
/// wait; a free one runs the body as the waiting form does.
@Suite struct LockWithoutWaitingTests {
    /// Runs `check` while another thread is inside the lock `hold` takes (it calls its argument from inside), then
    /// lets that thread go and waits for it.
    private static func whileAnotherThreadHolds(
        _ hold: @escaping @Sendable (_ inside: () -> Void) -> Void, _ check: () -> Void
    ) {
        let (held, release, done) = (
            DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
        )
        Thread.detachNewThread {
            hold {
                held.signal()
                release.wait()
            }
            done.signal()
        }
        held.wait()
        check()
        release.signal()
        done.wait()
    }

    @Test func aMutexHeldElsewhereIsNilAtOnce() {
        let mutex = BlockingMutex(1)
        #expect(mutex.withLockIfAvailable { $0 } == 1)
        Self.whileAnotherThreadHolds({ inside in mutex.withLock { _ in inside() } }) {
            #expect(mutex.withLockIfAvailable { $0 } == nil)
        }
        #expect(
            mutex.withLockIfAvailable {
                $0 += 1
                return $0
            } == 2)
    }

    @Test func aReadLockWaitsForNoReaderAndForNoWriter() {
        let lock = ReadWriteLock(7)
        // Another reader: readers share the lock.
        Self.whileAnotherThreadHolds({ inside in lock.withReadLock { _ in inside() } }) {
            #expect(lock.withReadLockIfAvailable { $0 } == 7)
        }
        // A writer: the non-waiting reader gets nil at once.
        Self.whileAnotherThreadHolds({ inside in
            lock.withWriteLock { value in
                value = 8
                inside()
            }
        }) {
            #expect(lock.withReadLockIfAvailable { $0 } == nil)
        }
        #expect(lock.withReadLockIfAvailable { $0 } == 8)
        #expect(lock.withReadLock { $0 } == 8)
    }
}
