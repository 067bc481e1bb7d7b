public import Foundation
import Synchronization

/// A program a test runs, with its standard output and error each read to the end by a thread of its own.
///
/// Reading one pipe to its end and then the other deadlocks once the child fills the second pipe's buffer (64 KiB
/// here) while the test waits on the first; collecting through `readabilityHandler` lost bytes a handler still held
/// after the process ended (CI once saw a 300,000-byte curl body come back short). Both readers here run until
/// their pipe closes, and ``wait()`` waits for both, bounded, so a grandchild that kept a pipe open cannot hang a
/// suite.
public final class ChildProcess: Sendable {
    /// How a program ended and what it wrote.
    public struct Result: Sendable {
        public var status: Int32
        public var output: Data
        public var errors: Data
        /// False when a pipe stayed open 30 s after the process ended (a grandchild kept it): the output may be cut.
        public var pipesClosed: Bool

        /// Standard output as text (invalid UTF-8 replaced).
        public var outputText: String { String(decoding: output, as: UTF8.self) }
        /// Standard error as text (invalid UTF-8 replaced).
        public var errorText: String { String(decoding: errors, as: UTF8.self) }
    }

    private let process: Process
    private let input: FileHandle
    private let stdout: PipeReader
    private let stderr: PipeReader

    /// Starts `path` with `arguments`; `environment` replaces the test's own when given.
    public init(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let stdin = Pipe()
        let out = Pipe()
        let err = Pipe()
        process.standardInput = stdin
        process.standardOutput = out
        process.standardError = err
        stdout = PipeReader(out.fileHandleForReading)
        stderr = PipeReader(err.fileHandleForReading)
        input = stdin.fileHandleForWriting
        try process.run()
        self.process = process
        stdout.start()
        stderr.start()
    }

    /// Runs a program to its end with `input` on its standard input.
    public static func run(
        _ path: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil,
        directory: String? = nil
    ) throws -> Result {
        let child = try ChildProcess(path, arguments, environment: environment, directory: directory)
        child.write(input)
        return child.wait()
    }

    /// What the program has written to its standard output so far.
    public var outputSoFar: Data { stdout.data }
    public var isRunning: Bool { process.isRunning }
    public var processIdentifier: Int32 { process.processIdentifier }

    public func write(_ data: Data) {
        if !data.isEmpty { input.write(data) }
    }

    /// Closes its standard input, waits for it to end and for both pipes to close.
    public func wait() -> Result {
        try? input.close()
        process.waitUntilExit()
        let (output, outputClosed) = stdout.waitForEnd()
        let (errors, errorsClosed) = stderr.waitForEnd()
        return Result(
            status: process.terminationStatus, output: output, errors: errors,
            pipesClosed: outputClosed && errorsClosed)
    }
}

/// Reads one pipe to its end on a thread of its own; `waitForEnd()` returns everything once the writer has closed.
private final class PipeReader: Sendable {
    private let handle: FileHandle
    private let received = Mutex(Data())
    private let ended = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) { self.handle = handle }

    /// What has arrived so far.
    var data: Data { received.withLock { $0 } }

    func start() {
        Thread.detachNewThread { [self] in
            while case let more = handle.availableData, !more.isEmpty { received.withLock { $0 += more } }
            ended.signal()
        }
    }

    /// Everything the pipe carried, and whether it closed. Bounded, so a grandchild that kept the pipe open cannot
    /// hang the suite.
    func waitForEnd() -> (Data, closed: Bool) {
        let closed = ended.wait(timeout: .now() + 30) == .success
        return (data, closed)
    }
}
