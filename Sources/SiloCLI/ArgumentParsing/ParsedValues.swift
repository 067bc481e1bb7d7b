/// Where a resolved value came from, for `--print-config`.
public enum ValueSource: Sendable, Equatable, CustomStringConvertible {
    case commandLine
    case environment(String)
    case configFile(String)
    case defaultValue

    public var description: String {
        switch self {
        case .commandLine: "flag"
        case .environment(let name): "env \(name)"
        case .configFile(let path): "config \(path)"
        case .defaultValue: "default"
        }
    }
}

/// The values of one command invocation, resolved in order: flags, then `SILO_*` environment variables, then the
/// config file, then the declared default.
public struct ParsedValues: Sendable {
    public let options: [OptionDefinition]
    /// Command-line occurrences by long name (flags hold `"true"`).
    var given: [String: [String]]
    public let positionals: [String]
    public let environment: [String: String]
    public let config: ConfigFile

    init(
        options: [OptionDefinition], given: [String: [String]], positionals: [String], environment: [String: String],
        config: ConfigFile
    ) {
        self.options = options
        self.given = given
        self.positionals = positionals
        self.environment = environment
        self.config = config
    }

    private func definition(_ name: String) -> OptionDefinition {
        guard let definition = options.first(where: { $0.name == name }) else {
            preconditionFailure("the command reads --\(name) but does not declare it")
        }
        return definition
    }

    /// Every value of an option with its source; the first source that has any wins.
    public func resolved(_ name: String) -> (values: [String], source: ValueSource) {
        let definition = definition(name)
        if let values = given[name], !values.isEmpty { return (values, .commandLine) }
        if let variable = definition.environment, let value = environment[variable], !value.isEmpty {
            return ([value], .environment(variable))
        }
        if definition.configurable {
            let values = config.values(for: name)
            if !values.isEmpty {
                return (definition.kind == .repeating ? values : [values.last!], .configFile(config.path))
            }
        }
        return (definition.defaultValue.map { [$0] } ?? [], .defaultValue)
    }

    /// The value of a `.value` option, or nil when no source has one.
    public func value(_ name: String) -> String? { resolved(name).values.last }

    /// Every value of a `.repeating` option.
    public func values(_ name: String) -> [String] { resolved(name).values }

    /// Whether a flag is on. Environment and config values are `true`/`yes`/`1` or `false`/`no`/`0`.
    public func flag(_ name: String) throws -> Bool {
        let (values, source) = resolved(name)
        guard let value = values.last else { return false }
        switch value.lowercased() {
        case "true", "yes", "1", "on": return true
        case "false", "no", "0", "off", "": return false
        default: throw ValidationError("--\(name) from \(source) must be true or false, not '\(value)'")
        }
    }

    /// A size in bytes: a number with an optional binary suffix (`64KiB`, `5MiB`, `2GiB`, `5TiB`; `K`, `M`, `G`, `T`
    /// mean the same), within `range`.
    public func byteCount(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = value(name) else { return nil }
        let units: [(String, Int64)] = [
            ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("T", 1 << 40), ("G", 1 << 30),
            ("M", 1 << 20), ("K", 1 << 10),
        ]
        var digits = Substring(text)
        var scale: Int64 = 1
        for (suffix, factor) in units where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let number = Int64(digits), number >= 0,
            case let (bytes, overflow) = number.multipliedReportingOverflow(by: scale),
            !overflow, range.contains(bytes)
        else {
            throw ValidationError(
                "--\(name) must be a size from \(range.lowerBound) to \(range.upperBound) bytes (e.g. 64MiB), not '\(text)'"
            )
        }
        return bytes
    }

    /// A value parsed as an integer in `range`, or the usage error naming the option.
    public func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw ValidationError("--\(name) must be \(range.lowerBound)–\(range.upperBound), not '\(text)'")
        }
        return number
    }
}
