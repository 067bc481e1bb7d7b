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
    private let rulesFile: String?
    private let keys: KeySet?
    private let logger: Logger
    /// Counts the rules' decisions across reloads (`/metrics`).
    let rulesStatistics = RulesStatistics()
    /// (mtime seconds, mtime nanoseconds, size) of the rules file when last loaded.
    private let rulesStamp = Mutex<[Int]>([])

    init(_ options: ServeOptions, logger: Logger) throws {
        var postureOptions = SecurityPosture.Options()
        postureOptions.bindAddress = options.host
        postureOptions.hasRules = options.rulesFile != nil
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

        rulesFile = options.rulesFile
        self.logger = logger
        if let path = options.rulesFile {
            let (program, stamp) = try Self.compileRules(path)
            policy = SwappableAccessPolicy(RulesAccessPolicy(program: program, statistics: rulesStatistics))
            rulesStamp.withLock { $0 = stamp }
        } else {
            policy = SwappableAccessPolicy(AllowAllPolicy())
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

    /// Reloads the rules if the file changed since they were loaded (polled; cheap: one stat).
    func reloadRules(force: Bool = false) {
        guard let path = rulesFile else { return }
        guard force || Self.stamp(path) != rulesStamp.withLock({ $0 }) else { return }
        do {
            let (program, stamp) = try Self.compileRules(path)
            policy.replace(with: RulesAccessPolicy(program: program, statistics: rulesStatistics))
            rulesStamp.withLock { $0 = stamp }
            logger.notice("rules reloaded", metadata: ["silo.rules.file": path])
        } catch {
            // Remember the broken file's stamp so it is reported once, not on every poll.
            rulesStamp.withLock { $0 = Self.stamp(path) }
            logger.error(
                "rules did not compile; keeping the rules loaded before", metadata: ["silo.rules.errors": "\(error)"])
        }
    }

    private static func compileRules(_ path: String) throws -> (RulesProgram, [Int]) {
        let stamp = stamp(path)
        let source = try readFile(path)
        do {
            return (try RulesProgram.compile(source: source, fileName: path), stamp)
        } catch {
            throw StorageError(.invalidArgument, error.formatted)
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
