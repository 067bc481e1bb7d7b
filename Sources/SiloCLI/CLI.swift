public import Foundation

/// The `silo` command line. `main` parses, validates and runs one command and returns its exit status; it never
/// exits the process and never prints a stack trace, so tests call it in-process.
public enum CLI {
    /// Runs `silo <arguments>` (without the program name). `handlesSignals` lets Ctrl-C cancel a running command
    /// (exit 130); only the real binary sets it.
    public static func main(
        arguments: [String], stdout: any OutputSink, stderr: any OutputSink,
        environment: [String: String] = ProcessInfo.processInfo.environment, handlesSignals: Bool = false
    ) async -> ExitCode {
        let outcome: ParseOutcome
        do {
            outcome = try ArgumentParser.parse(arguments, root: RootCommand.self, environment: environment)
        } catch {
            usage(error.message, path: error.path, stderr: stderr)
            return .usage
        }
        switch outcome {
        case .help(let path, let command):
            stdout.write(HelpText.render(command, path: path))
            return .success
        case .run(let path, let type, var values):
            let name = path.joined(separator: " ")
            do {
                values = try withConfig(values, environment: environment)
                let command = try type.init(from: values)
                try command.validate()
                let context = CommandContext(
                    stdout: stdout, stderr: stderr, environment: environment, values: values, commandName: name)
                if handlesSignals && !type.configuration.managesSignals {
                    try await Interrupts.cancellingOnSignal { try await command.run(context) }
                } else {
                    try await command.run(context)
                }
                return .success
            } catch {
                return report(error, path: path, stderr: stderr)
            }
        }
    }

    /// Loads the config file named by `--config`/`SILO_CONFIG`, else the default one if it exists.
    private static func withConfig(_ values: ParsedValues, environment: [String: String]) throws -> ParsedValues {
        let config: ConfigFile
        if let explicit = values.value("config") {
            config = try ConfigFile.load(path: explicit, required: true)
        } else if let path = ConfigFile.defaultPath(environment: environment) {
            config = try ConfigFile.load(path: path, required: false)
        } else {
            return values
        }
        return ParsedValues(
            options: values.options, given: values.given, positionals: values.positionals, environment: environment,
            config: config)
    }

    private static func usage(_ message: String, path: [String], stderr: any OutputSink) {
        let name = path.joined(separator: " ")
        stderr.line("\(name): \(message) (see '\(name) --help')")
    }

    /// Prints an error as one actionable line and picks the exit status.
    static func report(_ error: any Error, path: [String], stderr: any OutputSink) -> ExitCode {
        switch error {
        case let code as ExitCode:
            return code
        case let validation as ValidationError:
            usage(validation.message, path: path, stderr: stderr)
            return .usage
        case let failure as CommandFailure:
            stderr.line("silo: \(failure.message)")
            return failure.exitCode
        default:
            if ErrorMessages.isCancellation(error) {
                stderr.line("silo: interrupted")
                return .interrupted
            }
            stderr.line("silo: \(ErrorMessages.describe(error))")
            return .failure
        }
    }
}
