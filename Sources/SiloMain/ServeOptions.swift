import SiloCore

/// The options of `silo serve`, parsed from the command line.
struct ServeOptions {
    var host = "127.0.0.1"
    var port = 9199
    var dataDirectory = "./silo-data"
    var buckets: [BucketName] = []
    var insecureAllowAll = false
    var rulesFile: String?
    var emulator = false
    var authKeysFile: String?
    var authSecretFile: String?
    var adminKeyFile: String?
    var project: String?
    var threads = 8
    var drainSeconds = 30.0

    static let help = """
        Usage: silo serve [options]

        Serves the Firebase Storage v0 API and the GCS JSON API on one listener, storing metadata in SQLite and
        bytes on local disk.

        Options:
          --host ADDRESS          address to bind (default 127.0.0.1)
          --port N                port to bind (default 9199, the Firebase emulator's; 0 picks a free one)
          --data DIR              where metadata and blobs live (default ./silo-data)
          --bucket NAME           serve only this bucket (repeatable); without it any bucket name is served
                                  and created on first upload, as the Firebase emulator does
          --rules FILE            enforce these Firebase Security Rules (reloaded on SIGHUP and when the file
                                  changes; a file that fails to compile keeps the old rules)
          --emulator              Firebase emulator token handling: unsigned tokens accepted without verification,
                                  'owner' is the admin (the default on loopback without --rules)
          --auth-keys FILE        verify Firebase ID tokens (RS256) with this JWKS or X.509-certificate JSON file
          --auth-secret FILE      verify self-issued tokens (HS256) with the secret in this file (see 'silo token')
          --admin-key-file FILE   admin keys, one per line: 'Authorization: Bearer <key>' bypasses rules
          --project ID            Firebase project id tokens must be issued for (default: from the first --bucket,
                                  else demo-project)
          --insecure-allow-all    allow every request on a non-loopback address without rules
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
            case "--rules": options.rulesFile = try next()
            case "--emulator": options.emulator = true
            case "--auth-keys": options.authKeysFile = try next()
            case "--auth-secret": options.authSecretFile = try next()
            case "--admin-key-file": options.adminKeyFile = try next()
            case "--project": options.project = try next()
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

    /// The Firebase project id: `--project`, else the first bucket's `<project>.appspot.com` /
    /// `<project>.firebasestorage.app` prefix, else `demo-project` (the emulator's default).
    var projectID: String {
        if let project { return project }
        if let first = buckets.first?.rawValue {
            for suffix in [".appspot.com", ".firebasestorage.app"] where first.hasSuffix(suffix) {
                return String(first.dropLast(suffix.count))
            }
        }
        return "demo-project"
    }
}
