/// A usage error: printed as one line naming the command, and the run exits 64 (EX_USAGE).
public struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// A failure a person can act on ("object not found: gs://b/x"): printed as `silo: <message>`, exit 1 unless
/// another status is given.
public struct CommandFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var exitCode: ExitCode

    public init(_ message: String, exitCode: ExitCode = .failure) {
        self.message = message
        self.exitCode = exitCode
    }

    public var description: String { message }
}
