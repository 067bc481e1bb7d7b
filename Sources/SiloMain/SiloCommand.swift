#if canImport(Glibc)
import Glibc
#endif

/// Dispatches `silo <command>`. The full command-line interface (client commands, config files) is issue 6; this
/// covers `serve` and help.
enum SiloCommand {
    static let usage = """
        Silo — a self-hosted Cloud Storage for Firebase.

        Usage:
          silo serve [options]     run the storage server (default: 127.0.0.1:9199, data in ./silo-data)
          silo help                show this text

        Run 'silo serve --help' for the server's options.

        """

    static func main(_ arguments: [String]) -> Never {
        let rest = Array(arguments.dropFirst())
        guard let command = rest.first else {
            writeError(usage)
            exit(64)
        }
        switch command {
        case "serve":
            exit(ServeCommand.run(Array(rest.dropFirst())))
        case "help", "--help", "-h":
            writeOut(usage)
            exit(0)
        default:
            writeError("silo: unknown command '\(command)'. Run 'silo help'.\n")
            exit(64)
        }
    }
}

func writeOut(_ text: String) { write(1, text, text.utf8.count) }
func writeError(_ text: String) { write(2, text, text.utf8.count) }
