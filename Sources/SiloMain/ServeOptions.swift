import SiloCore

/// The options of `silo serve`, parsed from the command line.
struct ServeOptions {
    var host = "127.0.0.1"
    var port = 9199
    var dataDirectory = "./silo-data"
    var buckets: [BucketName] = []
    var insecureAllowAll = false
    var threads = 8
    var drainSeconds = 30.0

    static let help = """
        Usage: silo serve [options]

        Serves the Firebase Storage v0 API on one listener, storing metadata in SQLite and bytes on local disk.

        Options:
          --host ADDRESS          address to bind (default 127.0.0.1)
          --port N                port to bind (default 9199, the Firebase emulator's; 0 picks a free one)
          --data DIR              where metadata and blobs live (default ./silo-data)
          --bucket NAME           serve only this bucket (repeatable); without it any bucket name is served
                                  and created on first upload, as the Firebase emulator does
          --insecure-allow-all    allow everything on a non-loopback address (no rules engine yet)
          --threads N             request threads (default 8; handlers block on disk and SQLite)
          --drain-seconds S       how long SIGINT/SIGTERM waits for requests in flight (default 30)
          -h, --help              show this text

        """

    struct UsageError: Error { let message: String }

    static func parse(_ arguments: [String]) throws(UsageError) -> ServeOptions? {
        var options = ServeOptions()
        var i = 0
        func value(_ flag: String) throws(UsageError) -> String {
            i += 1
            guard i < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
            return arguments[i]
        }
        while i < arguments.count {
            var argument = arguments[i]
            var inline: String?
            if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
                inline = String(argument[argument.index(after: eq)...])
                argument = String(argument[..<eq])
            }
            func next() throws(UsageError) -> String {
                if let inline { return inline }
                return try value(argument)
            }
            switch argument {
            case "-h", "--help": return nil
            case "--host": options.host = try next()
            case "--port":
                let text = try next()
                guard let port = Int(text), (0...65535).contains(port) else {
                    throw UsageError(message: "--port must be 0–65535, not '\(text)'")
                }
                options.port = port
            case "--data": options.dataDirectory = try next()
            case "--bucket":
                let text = try next()
                do { options.buckets.append(try BucketName(text)) } catch {
                    throw UsageError(message: "--bucket: \((error as? StorageError)?.message ?? "\(error)")")
                }
            case "--insecure-allow-all": options.insecureAllowAll = true
            case "--threads":
                let text = try next()
                guard let n = Int(text), (1...256).contains(n) else {
                    throw UsageError(message: "--threads must be 1–256, not '\(text)'")
                }
                options.threads = n
            case "--drain-seconds":
                let text = try next()
                guard let s = Double(text), s >= 0 else {
                    throw UsageError(message: "--drain-seconds must be a number ≥ 0")
                }
                options.drainSeconds = s
            default:
                throw UsageError(message: "unknown option '\(argument)' for 'silo serve'")
            }
            i += 1
        }
        return options
    }

    /// Loopback addresses, where allow-all is the emulator's normal mode.
    var isLoopback: Bool {
        host == "127.0.0.1" || host == "::1" || host == "localhost" || host.hasPrefix("127.")
    }
}
