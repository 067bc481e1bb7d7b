/// A command of the `silo` tool: a value type built from parsed values, validated, then run.
///
/// `init(from:)` reads values (and may throw `ValidationError` for malformed ones); `validate()` checks how they
/// combine, before anything touches the network or the disk; `run(_:)` does the work. A command with subcommands
/// and nothing of its own to do keeps the default `run`, which asks for a subcommand.
public protocol ParsableCommand: Sendable {
    static var configuration: CommandConfiguration { get }
    init(from values: ParsedValues) throws
    func validate() throws
    func run(_ context: CommandContext) async throws
}

extension ParsableCommand {
    public func validate() throws {}

    public func run(_ context: CommandContext) async throws {
        throw ValidationError("missing subcommand (one of: \(Self.subcommandNames))")
    }

    static var subcommandNames: String {
        configuration.subcommands.map { $0.configuration.name }.joined(separator: ", ")
    }
}

/// What a running command may use: its output streams, the environment, and its parsed values.
public struct CommandContext: Sendable {
    public var stdout: any OutputSink
    public var stderr: any OutputSink
    public var environment: [String: String]
    public var values: ParsedValues
    /// The command path, e.g. `silo meta set`.
    public var commandName: String
}
