import Foundation
import SiloRules

/// `silo rules`: Security Rules tooling.
struct RulesCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "rules", abstract: "Security Rules tools.", subcommands: [RulesCheckCommand.self])
    }

    init(from values: ParsedValues) throws {}
}

/// `silo rules check FILE…`: compile rules files and print `FILE:LINE:COL: message` diagnostics.
struct RulesCheckCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "check", abstract: "Compile Security Rules files; print diagnostics and exit 1 on errors.",
            arguments: [ArgumentDefinition("FILE", help: "a storage.rules file", repeating: true)])
    }

    var files: [String]

    init(from values: ParsedValues) throws { files = values.positionals }

    func run(_ context: CommandContext) async throws {
        var failed = false
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CommandFailure("cannot read \(file)")
            }
            do {
                _ = try RulesProgram.compile(source: String(decoding: data, as: UTF8.self), fileName: file)
                context.stdout.line("\(file): ok")
            } catch {
                context.stderr.line(error.formatted)
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
    }
}
