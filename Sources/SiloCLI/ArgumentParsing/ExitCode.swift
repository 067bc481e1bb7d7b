/// A process exit status. It is an `Error`, so a command can end the run with a specific status by throwing it.
public struct ExitCode: Error, Sendable, Equatable, CustomStringConvertible {
    public var rawValue: Int32

    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    public static let success = ExitCode(0)
    /// Something went wrong that the user can act on; the message was printed.
    public static let failure = ExitCode(1)
    /// EX_USAGE: the command line was wrong.
    public static let usage = ExitCode(64)
    /// 128 + SIGINT: cancelled with Ctrl-C.
    public static let interrupted = ExitCode(130)

    public var description: String { "exit \(rawValue)" }
}
