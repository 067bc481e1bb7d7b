/// Renders `--help` for a command.
enum HelpText {
    static func render(_ command: any ParsableCommand.Type, path: [String]) -> String {
        let configuration = command.configuration
        let name = path.joined(separator: " ")
        var text = "OVERVIEW: \(configuration.abstract)\n"
        if !configuration.discussion.isEmpty { text += "\n" + configuration.discussion + "\n" }

        var usage = "USAGE: \(name)"
        if !configuration.subcommands.isEmpty { usage += " <command>" }
        usage += " [options]"
        for argument in configuration.arguments {
            var piece = argument.name + (argument.repeating ? " ..." : "")
            if argument.optional { piece = "[\(piece)]" }
            usage += " " + piece
        }
        text += "\n" + usage + "\n"

        if !configuration.arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            text += table(configuration.arguments.map { ($0.name, $0.help) })
        }
        if !configuration.subcommands.isEmpty {
            text += "\nCOMMANDS:\n"
            text += table(configuration.subcommands.map { ($0.configuration.name, $0.configuration.abstract) })
        }
        text += "\nOPTIONS:\n"
        text += table(
            configuration.allOptions.map { option in
                var left = option.short.map { "-\($0), " } ?? ""
                left += "--" + option.name
                if option.kind != .flag { left += " " + option.valueName }
                var right = option.help
                var notes: [String] = []
                if let value = option.defaultValue { notes.append("default \(value)") }
                if let variable = option.environment { notes.append("env \(variable)") }
                if option.kind == .repeating { notes.append("repeatable") }
                if !notes.isEmpty { right += " (\(notes.joined(separator: "; ")))" }
                return (left, right)
            })
        if !configuration.subcommands.isEmpty {
            text += "\nRun '\(name) <command> --help' for a command's options.\n"
        }
        return text
    }

    /// Two columns: names padded to a common width (at most 26), text wrapped at 118 columns.
    private static func table(_ rows: [(String, String)]) -> String {
        let width = min(26, (rows.map(\.0.count).max() ?? 0) + 2)
        var text = ""
        for (left, right) in rows {
            let indent = String(repeating: " ", count: width + 2)
            var line = "  " + left
            if left.count + 2 > width {
                text += line + "\n"
                line = indent
            } else {
                line += String(repeating: " ", count: width - left.count)
            }
            var lineLength = line.count
            var first = true
            for word in right.split(separator: " ") {
                if !first && lineLength + 1 + word.count > 118 {
                    text += line + "\n"
                    line = indent + word
                    lineLength = line.count
                    continue
                }
                line += (first ? "" : " ") + word
                lineLength += (first ? 0 : 1) + word.count
                first = false
            }
            text += line + "\n"
        }
        return text
    }
}
