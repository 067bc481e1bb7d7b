import Dispatch
import SiloCLI
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs `silo <command>` through the command line in `SiloCLI`, with `serve` (which owns the backends) registered
/// into its command tree. `CLI.main` prints help and errors itself and returns the exit status.
enum SiloCommand {
    static func main(_ arguments: [String]) -> Never {
        CLI.register(serve: ServeCommand.self)
        exit(runCLI(Array(arguments.dropFirst())))
    }

    /// Runs `CLI.main` on the cooperative pool and blocks the main thread (never a pool thread) until it is done.
    private static func runCLI(_ arguments: [String]) -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let status = Mutex<Int32>(1)
        Task.detached {
            let code = await CLI.main(
                arguments: arguments, stdout: FileDescriptorSink.standardOutput,
                stderr: FileDescriptorSink.standardError, handlesSignals: true)
            status.withLock { $0 = code.rawValue }
            done.signal()
        }
        done.wait()
        return status.withLock { $0 }
    }
}

func writeOut(_ text: String) { write(1, text, text.utf8.count) }
func writeError(_ text: String) { write(2, text, text.utf8.count) }
