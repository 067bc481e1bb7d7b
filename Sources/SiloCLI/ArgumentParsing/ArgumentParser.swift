/// The outcome of parsing a command line.
enum ParseOutcome {
    /// `--help` (or `help`) for the command at this path.
    case help(path: [String], command: any ParsableCommand.Type)
    /// The command to run with its values.
    case run(path: [String], command: any ParsableCommand.Type, values: ParsedValues)
}

/// A usage error together with the command it concerns, so the message can name it.
struct UsageError: Error {
    var path: [String]
    var message: String
}

/// Walks the command tree: tokens before a subcommand's name belong to the parent; `--` ends option parsing;
/// `--name=value`, `--name value`, `-x value`, `-xVALUE` and clustered short flags (`-rl`) are accepted.
enum ArgumentParser {
    static func parse(
        _ arguments: [String], root: any ParsableCommand.Type, environment: [String: String]
    ) throws(UsageError) -> ParseOutcome {
        var path = [root.configuration.name]
        var command = root
        var given: [String: [String]] = [:]
        var positionals: [String] = []
        var index = 0
        var optionsEnded = false

        while index < arguments.count {
            let token = arguments[index]
            index += 1
            let options = command.configuration.allOptions
            if !optionsEnded && token == "--" {
                optionsEnded = true
                continue
            }
            if !optionsEnded && token.hasPrefix("--") && token.count > 2 {
                var name = String(token.dropFirst(2))
                var inline: String?
                if let equals = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                guard let option = options.first(where: { $0.name == name }) else {
                    var message = "unknown option '--\(name)'"
                    if let guess = Suggestions.closest(to: name, among: options.map(\.name)) {
                        message += "; did you mean '--\(guess)'?"
                    }
                    throw UsageError(path: path, message: message)
                }
                if option.name == "help" { return .help(path: path, command: command) }
                switch option.kind {
                case .flag:
                    if inline != nil { throw UsageError(path: path, message: "--\(name) takes no value") }
                    given[name, default: []].append("true")
                case .value, .repeating:
                    let value: String
                    if let inline {
                        value = inline
                    } else {
                        guard index < arguments.count else {
                            throw UsageError(path: path, message: "--\(name) needs a value (\(option.valueName))")
                        }
                        value = arguments[index]
                        index += 1
                    }
                    given[name, default: []].append(value)
                }
                continue
            }
            if !optionsEnded && token.hasPrefix("-") && token.count > 1 && !isNegativeNumber(token) {
                var characters = Substring(token.dropFirst())
                while let letter = characters.first {
                    characters = characters.dropFirst()
                    guard let option = options.first(where: { $0.short == letter }) else {
                        throw UsageError(path: path, message: "unknown option '-\(letter)'")
                    }
                    if option.name == "help" { return .help(path: path, command: command) }
                    if option.kind == .flag {
                        given[option.name, default: []].append("true")
                        continue
                    }
                    let value: String
                    if !characters.isEmpty {
                        value = String(characters)
                        characters = ""
                    } else {
                        guard index < arguments.count else {
                            throw UsageError(path: path, message: "-\(letter) needs a value (\(option.valueName))")
                        }
                        value = arguments[index]
                        index += 1
                    }
                    given[option.name, default: []].append(value)
                }
                continue
            }
            // A positional. The first one of a command with subcommands names the subcommand.
            let subcommands = command.configuration.subcommands
            if !subcommands.isEmpty && positionals.isEmpty && !optionsEnded {
                if token == "help" {
                    // `silo help cp` is `silo cp --help`.
                    var target = command
                    var targetPath = path
                    for name in arguments[index...] {
                        guard
                            let next = target.configuration.subcommands.first(where: { $0.configuration.name == name })
                        else { throw unknownCommand(name, in: target, path: targetPath) }
                        target = next
                        targetPath.append(name)
                    }
                    return .help(path: targetPath, command: target)
                }
                guard let next = subcommands.first(where: { $0.configuration.name == token }) else {
                    throw unknownCommand(token, in: command, path: path)
                }
                // Options given before the subcommand apply to it as well when it declares them.
                let carried = given.filter { key, _ in next.configuration.allOptions.contains { $0.name == key } }
                command = next
                path.append(token)
                given = carried
                continue
            }
            positionals.append(token)
        }

        try checkPositionals(positionals, of: command, path: path)
        return .run(
            path: path, command: command,
            values: ParsedValues(
                options: command.configuration.allOptions, given: given, positionals: positionals,
                environment: environment, config: ConfigFile(path: "", entries: [])))
    }

    private static func unknownCommand(_ name: String, in command: any ParsableCommand.Type, path: [String])
        -> UsageError
    {
        var message = "unknown command '\(name)'"
        let names = command.configuration.subcommands.map { $0.configuration.name }
        if let guess = Suggestions.closest(to: name, among: names) { message += "; did you mean '\(guess)'?" }
        return UsageError(path: path, message: message)
    }

    private static func isNegativeNumber(_ token: String) -> Bool {
        token.count > 1 && token.dropFirst().allSatisfy { $0.isNumber || $0 == "." }
    }

    private static func checkPositionals(_ positionals: [String], of command: any ParsableCommand.Type, path: [String])
        throws(UsageError)
    {
        let arguments = command.configuration.arguments
        if arguments.isEmpty && !command.configuration.subcommands.isEmpty && positionals.isEmpty { return }
        let required = arguments.filter { !$0.optional }.count
        if positionals.count < required {
            let missing = arguments.filter { !$0.optional }[positionals.count...].map(\.name)
            throw UsageError(path: path, message: "missing \(missing.joined(separator: " "))")
        }
        if !arguments.contains(where: \.repeating), positionals.count > arguments.count {
            throw UsageError(path: path, message: "unexpected argument '\(positionals[arguments.count])'")
        }
    }
}
