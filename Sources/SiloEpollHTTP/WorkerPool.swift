#if os(Linux)
internal import CLinux
import Dispatch
import Glibc
import SiloCore
import SiloHTTP
import Synchronization

/// A fixed set of threads that run the handler calls that may block (``HandlerCall``), so the event loops never
/// wait on a store, fsync, the network or hashing. Work waits in a bounded queue; a loop whose call does not fit
/// keeps it (and that connection reads nothing) until the pool has room, and is woken when it has.
final class WorkerPool: Sendable {
    private struct Job {
        let call: HandlerCall
        /// Where the finished call goes back to; nil for a call whose result nobody waits for (an abort).
        let mailbox: LoopMailbox?
    }

    private struct Queue {
        var jobs: [Job] = []
        /// Jobs before this index were taken (compacted now and then, so taking is O(1)).
        var head = 0
        /// Loops holding calls that did not fit, to wake when there is room.
        var waiting: [LoopMailbox] = []
        var stopping = false
        var count: Int { jobs.count - head }
    }

    /// Taken by a loop and a worker on every hand-off: a lock that sleeps rather than spins (``BlockingMutex``).
    /// With the loops and sixteen workers on one core, `Mutex`'s spinning while a preempted holder kept the lock was
    /// 5.5% of the server's CPU on PostgreSQL-backed GETs (`perf`, bench/profile.sh get postgres).
    private let queue = BlockingMutex(Queue())
    /// Counts queued jobs (and, at stop, one extra signal per worker): workers sleep on it.
    private let ready = DispatchSemaphore(value: 0)
    private let limit: Int
    private let threads: Mutex<[pthread_t]>
    private let logger: Logger

    init(workers: Int, queueLimit: Int, logger: Logger) throws {
        self.limit = queueLimit
        self.logger = logger
        self.threads = Mutex([])
        for _ in 0..<workers {
            // Ownership: the thread takes this reference (takeRetainedValue in workerThreadMain).
            let argument = Unmanaged.passRetained(self).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, workerThreadMain, argument)
            guard created == 0 else {
                Unmanaged<WorkerPool>.fromOpaque(argument).release()
                stop()
                throw HTTPServerError(
                    .startFailed, "cannot start a worker thread",
                    cause: SystemCallError(call: "pthread_create", errno: created))
            }
            threads.withLock { $0.append(thread) }
        }
    }

    /// Queues `call`; its result is posted to `mailbox`. False when the queue is full: the caller keeps the call
    /// and submits it again when `mailbox` is woken.
    func submit(_ call: HandlerCall, replyingTo mailbox: LoopMailbox) -> Bool {
        let queued = queue.withLock { queue -> Bool in
            guard queue.count < limit else {
                if !queue.waiting.contains(where: { $0 === mailbox }) { queue.waiting.append(mailbox) }
                return false
            }
            queue.jobs.append(Job(call: call, mailbox: mailbox))
            return true
        }
        if queued { ready.signal() }
        return queued
    }

    /// Queues a call nobody waits for (aborting a sink whose connection is gone), past the bound: there is at most
    /// one per connection, and refusing it would leave the sink unaborted.
    func submitDetached(_ call: HandlerCall) {
        queue.withLock { $0.jobs.append(Job(call: call, mailbox: nil)) }
        ready.signal()
    }

    /// Runs queued calls until ``stop()``; the body of each worker thread.
    fileprivate func work() {
        while true {
            ready.wait()
            let (job, waiting) = queue.withLock { queue -> (Job?, [LoopMailbox]) in
                guard queue.head < queue.jobs.count else { return (nil, []) }
                let job = queue.jobs[queue.head]
                queue.head += 1
                if queue.head >= 64 && queue.head * 2 >= queue.jobs.count {
                    queue.jobs.removeFirst(queue.head)
                    queue.head = 0
                }
                let waiting = queue.waiting
                queue.waiting = []
                return (job, waiting)
            }
            for mailbox in waiting { mailbox.wake() }
            guard let job else {
                if queue.withLock({ $0.stopping }) { return }
                continue
            }
            job.call.run()
            if let mailbox = job.mailbox {
                mailbox.post(job.call)
            }
        }
    }

    /// Lets the workers finish what is queued, then ends and joins them. Called after the loops have stopped.
    func stop() {
        let workers = threads.withLock { threads in
            let taken = threads
            threads = []
            return taken
        }
        queue.withLock { $0.stopping = true }
        for _ in 0..<max(workers.count, 1) { ready.signal() }
        for thread in workers { _ = pthread_join(thread, nil) }
    }
}

/// The thread body; a free function so it is a plain C function pointer with no actor isolation.
private func workerThreadMain(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let argument else { return nil }
    let pool = Unmanaged<WorkerPool>.fromOpaque(argument).takeRetainedValue()
    silo_name_this_thread("silo-worker")
    pool.work()
    return nil
}

/// Where workers hand finished calls back to one event loop: a locked list plus the loop's eventfd. The eventfd is
/// written only when the list goes from empty to not empty, so a busy loop gets one wake-up for many calls.
///
/// The eventfd is written after the lock is released: written under it, the wake-up let the loop preempt the
/// worker inside the lock (they share a core), and the loop then slept on the lock until the worker ran again —
/// two futex calls and two extra context switches per call (strace of PostgreSQL-backed GETs: 4.5 futex calls
/// per request). So the mailbox owns the descriptor and closes it when the last reference goes (the loop, a
/// queued job, the loop's thread handle): whoever writes holds a reference, so it never writes a closed or reused
/// descriptor.
final class LoopMailbox: Sendable {
    private struct Box {
        var finished: [HandlerCall] = []
        /// The loop has exited: nobody takes calls any more.
        var closed = false
    }

    /// Sleeps rather than spins, as the pool's queue.
    private let box = BlockingMutex(Box())
    private let wakeFD: Int32

    /// Takes ownership of `wakeFD`.
    init(wakeFD: Int32) { self.wakeFD = wakeFD }

    deinit { _ = Glibc.close(wakeFD) }

    func post(_ call: HandlerCall) {
        let (accepted, first) = box.withLock { box -> (Bool, Bool) in
            guard !box.closed else { return (false, false) }
            box.finished.append(call)
            return (true, box.finished.count == 1)
        }
        // A wake-up that arrives after the loop took the list is spurious, and harmless.
        if first { wake() }
        // The loop is gone, and with it every connection: the result is released here, on the worker.
        if !accepted { call.releaseUnclaimed() }
    }

    /// Wakes the loop: a finished call, room in the pool's queue, or shutdown. A loop that has exited reads no more
    /// wake-ups; the write is harmless then.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// The finished calls, oldest first; called by the loop.
    func take() -> [HandlerCall] {
        box.withLock { box in
            let taken = box.finished
            box.finished = []
            return taken
        }
    }

    /// The loop is exiting; returns what was posted and not taken.
    func close() -> [HandlerCall] {
        box.withLock { box in
            box.closed = true
            let taken = box.finished
            box.finished = []
            return taken
        }
    }
}
#endif
