import SiloAuth
import SiloCore
import SiloRules
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Who may do what for `silo serve`: the security posture from the flags, the token verifier, and the access
/// policy — with rules and keys reloaded on SIGHUP, and rules also when their file changes.
final class ServeSecurity: Sendable {
    let posture: SecurityPosture
    let verifier: TokenVerifier
    let policy: SwappableAccessPolicy
    /// The `--service-account` keys, with the tokens issued for them and the hosts URLs are signed for.
    let serviceAccounts: ServiceAccountAuthority
    private let rulesFiles: [RulesFile]
    private let keys: KeySet?
    private let logger: Logger
    /// Counts the rules' decisions across reloads (`/metrics`).
    let rulesStatistics = RulesStatistics()
    /// (mtime seconds, mtime nanoseconds, size) of each rules file when last loaded.
    private let rulesStamps = Mutex<[[Int]]>([])

    init(_ options: ServeOptions, logger: Logger) throws {
        var postureOptions = SecurityPosture.Options()
        postureOptions.bindAddress = options.host
        postureOptions.hasRules = !options.rules.isEmpty
        postureOptions.emulator = options.emulator
        postureOptions.insecureAllowAll = options.insecureAllowAll
        postureOptions.hasVerifiableCredentials =
            options.authKeysFile != nil || options.authSecretFile != nil || options.adminKeyFile != nil
            || !options.serviceAccountFiles.isEmpty
        let accounts = try ServiceAccounts(keyFiles: options.serviceAccountFiles)
        let hosts =
            options.signedURLHosts.isEmpty ? ServiceAccountAuthority.defaultSignedURLHosts : options.signedURLHosts
        postureOptions.serviceAccounts = accounts.emails
        postureOptions.signedURLHosts = hosts
        posture = try SecurityPosture.decide(postureOptions)
        serviceAccounts = ServiceAccountAuthority(
            accounts: accounts, signedURLHosts: hosts, acceptUnverifiedSigners: posture.emulatorTokens)

        var configuration = TokenVerifier.Configuration()
        configuration.emulator = posture.emulatorTokens
        if let path = options.authKeysFile {
            let keys = try KeySet(contentsOfFile: path)
            configuration.firebase = FirebaseIDTokens(projectID: options.projectID, keys: keys)
            self.keys = keys
        } else {
            self.keys = nil
        }
        if let path = options.authSecretFile {
            configuration.selfIssued = try SelfIssuedTokens(secretFile: path, audience: options.projectID)
        }
        if let path = options.adminKeyFile { configuration.adminKeys = try AdminKeys(contentsOfFile: path) }
        verifier = TokenVerifier(configuration)

        rulesFiles = options.rules
        self.logger = logger
        if options.rules.isEmpty {
            policy = SwappableAccessPolicy(AllowAllPolicy())
        } else {
            let (rules, stamps) = try Self.compileRules(options.rules, statistics: rulesStatistics)
            policy = SwappableAccessPolicy(rules)
            rulesStamps.withLock { $0 = stamps }
        }
    }

    /// SIGHUP: reload the rules file and the key set; a failure keeps what is loaded and logs why.
    func reload() {
        reloadRules(force: true)
        if let keys {
            do {
                let count = try keys.reload()
                logger.notice("auth keys reloaded", metadata: ["silo.auth.keys": "\(count)"])
            } catch {
                logger.error("auth keys not reloaded; keeping the loaded keys", metadata: ["silo.error": error.message])
            }
        }
    }

    /// Reloads the rules if one of their files changed since they were loaded (polled; cheap: one stat a file). All
    /// files are compiled again and swapped in together, replacing rules set through `/internal/setRules` too.
    func reloadRules(force: Bool = false) {
        guard !rulesFiles.isEmpty else { return }
        guard force || rulesFiles.map({ Self.stamp($0.path) }) != rulesStamps.withLock({ $0 }) else { return }
        let names = rulesFiles.map(\.path).joined(separator: ", ")
        do {
            let (rules, stamps) = try Self.compileRules(rulesFiles, statistics: rulesStatistics)
            policy.replace(with: rules)
            rulesStamps.withLock { $0 = stamps }
            logger.notice("rules reloaded", metadata: ["silo.rules.file": names])
        } catch {
            // Remember the broken files' stamps so they are reported once, not on every poll.
            rulesStamps.withLock { $0 = rulesFiles.map { Self.stamp($0.path) } }
            logger.error(
                "rules did not compile; keeping the rules loaded before", metadata: ["silo.rules.errors": "\(error)"])
        }
    }

    /// Every file read and compiled (stamped before it is read: a change while reading shows at the next poll).
    private static func compileRules(
        _ files: [RulesFile], statistics: RulesStatistics
    ) throws -> (any AccessPolicy, [[Int]]) {
        var stamps: [[Int]] = []
        var sources: [RulesSource] = []
        for file in files {
            stamps.append(stamp(file.path))
            sources.append(RulesSource(name: file.path, content: try readFile(file.path), bucket: file.bucket))
        }
        do {
            return (try RulesSource.policy(sources, statistics: statistics), stamps)
        } catch {
            throw StorageError(.invalidArgument, error.diagnostics)
        }
    }

    private static func stamp(_ path: String) -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_size)]
    }

    private static func readFile(_ path: String) throws -> String {
        guard let file = fopen(path, "rb") else {
            throw StorageError(.notFound, "cannot read rules file \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n == 0 { break }
            bytes += buffer.prefix(n)
            guard bytes.count <= 1 << 20 else {
                throw StorageError(.invalidArgument, "rules file \(path) exceeds 1 MiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw StorageError(.invalidArgument, "rules file \(path) is not UTF-8")
        }
        return text
    }
}
