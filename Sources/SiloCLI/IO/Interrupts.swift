import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs an operation that Ctrl-C cancels: SIGINT (and SIGTERM) cancel the Swift task running it, so transfers stop
/// through the SDK's task cancellation and partial files stay for a resume. Only the `silo` binary installs this;
/// in-process tests never touch the process's signal dispositions.
enum Interrupts {
    static func cancellingOnSignal<T: Sendable>(
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let task = Task { try await operation() }
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "silo.cli.signals")
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { task.cancel() }
            source.resume()
            return source
        }
        defer {
            sources.forEach { $0.cancel() }
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        return try await task.value
    }
}
