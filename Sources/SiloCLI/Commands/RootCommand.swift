import Synchronization

/// `silo`: the root of the command tree. `serve` lives in the executable (it owns the backends) and joins the tree
/// through `CLI.register(serve:)`.
struct RootCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "silo", abstract: "Silo, a self-hosted Cloud Storage for Firebase: the server and its client.",
            discussion: """
                Objects are addressed as gs://BUCKET/PATH. Client commands talk to --endpoint (SILO_ENDPOINT, default
                http://127.0.0.1:9199) with the token from --token (SILO_TOKEN). Values come from flags, then SILO_*
                environment variables, then the config file (~/.config/silo/config or --config FILE: 'key = value'
                lines, keys are long option names such as 'endpoint' or 'port').
                """,
            subcommands: CLI.commands)
    }

    init(from values: ParsedValues) throws {}
}

extension CLI {
    private static let registeredServeCommand = Mutex<(any ParsableCommand.Type)?>(nil)

    /// Adds `silo serve` (defined by the executable) to the command tree. Call before `main`.
    public static func register(serve: any ParsableCommand.Type) {
        registeredServeCommand.withLock { $0 = serve }
    }

    private static var registeredServe: (any ParsableCommand.Type)? { registeredServeCommand.withLock { $0 } }

    /// Every command under `silo`, in help order. `serve` comes first when the executable registered it.
    static var commands: [any ParsableCommand.Type] {
        registeredServe.map { [$0] + clientCommands } ?? clientCommands
    }

    static let clientCommands: [any ParsableCommand.Type] = [
        CopyCommand.self, ListCommand.self, StatCommand.self, CatCommand.self, RemoveCommand.self,
        MetaCommand.self, URLCommand.self, TokenCommand.self, RulesCommand.self, ExportCommand.self,
        ImportCommand.self,
    ]
}
