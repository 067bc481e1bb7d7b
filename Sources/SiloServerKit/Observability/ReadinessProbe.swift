import Foundation
import SiloCore
import Synchronization

/// Asks both stores whether they answer, on a thread of its own, and waits for at most `timeout`: a store that
/// hangs (a PostgreSQL server gone silent, an S3 endpoint dropping packets) makes `/readyz` answer 503 in time
/// rather than hold a worker. One check runs at a time; a request that comes while one is running is told so
/// (503), so a stuck store cannot pile up threads.
final class ReadinessProbe: Sendable {
    private let running = Atomic<Bool>(false)
    let timeout: Double

    init(timeout: Double) { self.timeout = timeout }

    /// The stores that failed, each with its error (for the log, not the client); nil when ready.
    func check(_ service: ObjectService) -> [(store: String, error: String)]? {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return [("probe", "a readiness check is still waiting for the stores")]
        }
        let outcome = Outcome()
        let thread = Thread { [self] in
            let failures = Self.failures(service)
            // Cleared before the answer is handed over, so that a check right after this one's answer may run.
            running.store(false, ordering: .releasing)
            outcome.finish(failures)
        }
        thread.name = "silo-readiness"
        thread.start()
        guard outcome.done.wait(timeout: .now() + timeout) == .success else {
            return [("stores", "no answer within \(timeout) s")]
        }
        let failures = outcome.result.withLock { $0 } ?? []
        return failures.isEmpty ? nil : failures
    }

    private final class Outcome: Sendable {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<[(store: String, error: String)]?>(nil)

        func finish(_ failures: [(store: String, error: String)]) {
            result.withLock { $0 = failures }
            done.signal()
        }
    }

    /// A read of a bucket record (found or not, the store answered) and an open of a blob id nobody made (a store
    /// that answers says it does not exist).
    private static func failures(_ service: ObjectService) -> [(store: String, error: String)] {
        var failures: [(store: String, error: String)] = []
        do {
            _ = try service.metadata.bucket(try BucketName("silo-readiness-probe"))
        } catch {
            failures.append(("metadata", StorageError.wrap(error).detailedDescription()))
        }
        do {
            let reader = try service.blobs.openReader(BlobID.random())
            _ = reader
        } catch let error as StorageError where error.code == .notFound {
            // The expected answer.
        } catch {
            failures.append(("blobs", StorageError.wrap(error).detailedDescription()))
        }
        return failures
    }
}
