import Dispatch

/// Runs a test body that blocks (a server round trip per step, a store that waits on PostgreSQL or S3) on a thread of
/// its own instead of one of Swift's cooperative threads, as part of the calling task: `#expect` and `#require` still
/// report to the test that called it.
///
/// Why: swift-testing runs synchronous tests and parameterized cases on the cooperative pool, which has one thread
/// per core. A case that blocks holds its thread, so on CI's two cores only two blocking cases progress at a time,
/// however idle the cores are while they wait.
public func offThePool<T>(_ label: String, _ body: () throws -> T) async rethrows -> T {
    let executor = DispatchTaskExecutor(label: label)
    return try await withTaskExecutorPreference(executor) { try body() }
}

/// A task executor on a serial dispatch queue: a queue with no target gets a thread of its own from Dispatch while it
/// has work, so tasks that block on it wait without taking a cooperative thread.
private final class DispatchTaskExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(label: String) { queue = DispatchQueue(label: label) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
