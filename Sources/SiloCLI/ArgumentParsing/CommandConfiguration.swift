/// One `--name` option of a command.
public struct OptionDefinition: Sendable {
    public enum Kind: Sendable, Equatable {
        /// Present or absent (`--recursive`).
        case flag
        /// Takes one value (`--port 9199`, `--port=9199`); the last occurrence wins.
        case value
        /// Takes a value each time it is given (`--metadata k=v --metadata k2=v2`).
        case repeating
    }

    /// The long name without dashes.
    public var name: String
    public var short: Character?
    public var kind: Kind
    /// The placeholder shown in help (`N`, `DIR`).
    public var valueName: String
    public var help: String
    /// The `SILO_*` environment variable consulted when the flag is absent.
    public var environment: String?
    /// Whether the config file's `name = value` line is consulted after the environment.
    public var configurable: Bool
    /// The default, for help and `--print-config`.
    public var defaultValue: String?

    public static func flag(
        _ name: String, short: Character? = nil, help: String, environment: String? = nil, configurable: Bool = false
    ) -> OptionDefinition {
        OptionDefinition(
            name: name, short: short, kind: .flag, valueName: "", help: help, environment: environment,
            configurable: configurable, defaultValue: nil)
    }

    public static func value(
        _ name: String, short: Character? = nil, valueName: String, help: String, environment: String? = nil,
        configurable: Bool = false, defaultValue: String? = nil
    ) -> OptionDefinition {
        OptionDefinition(
            name: name, short: short, kind: .value, valueName: valueName, help: help, environment: environment,
            configurable: configurable, defaultValue: defaultValue)
    }

    public static func repeating(
        _ name: String, short: Character? = nil, valueName: String, help: String, environment: String? = nil,
        configurable: Bool = false
    ) -> OptionDefinition {
        OptionDefinition(
            name: name, short: short, kind: .repeating, valueName: valueName, help: help, environment: environment,
            configurable: configurable, defaultValue: nil)
    }
}

/// One positional argument of a command.
public struct ArgumentDefinition: Sendable {
    /// Shown in usage and help (`SOURCE`).
    public var name: String
    public var help: String
    public var optional: Bool
    /// Takes every remaining positional (only the last argument may).
    public var repeating: Bool

    public init(_ name: String, help: String, optional: Bool = false, repeating: Bool = false) {
        self.name = name
        self.help = help
        self.optional = optional
        self.repeating = repeating
    }
}

/// What a command is called, what it says about itself, and what it accepts.
public struct CommandConfiguration: Sendable {
    public var name: String
    public var abstract: String
    /// More text under the overview in `--help`.
    public var discussion: String
    public var options: [OptionDefinition]
    public var arguments: [ArgumentDefinition]
    public var subcommands: [any ParsableCommand.Type]
    /// The command installs its own SIGINT/SIGTERM handling (`serve` drains and exports); otherwise the binary's
    /// Ctrl-C cancels the running command.
    public var managesSignals: Bool

    public init(
        name: String, abstract: String, discussion: String = "", options: [OptionDefinition] = [],
        arguments: [ArgumentDefinition] = [], subcommands: [any ParsableCommand.Type] = [],
        managesSignals: Bool = false
    ) {
        self.managesSignals = managesSignals
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
    }

    /// The options every command accepts besides its own.
    static let builtInOptions: [OptionDefinition] = [
        .value(
            "config", valueName: "FILE", help: "read defaults from FILE (default ~/.config/silo/config)",
            environment: "SILO_CONFIG"),
        .flag("help", short: "h", help: "show this help"),
    ]

    /// The command's options followed by the built-in ones.
    var allOptions: [OptionDefinition] { options + Self.builtInOptions }
}
