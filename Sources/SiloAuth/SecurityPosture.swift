/// What `silo serve` allows and how it treats tokens, decided from its flags (the README's "Safe defaults").
///
/// Pure, so every combination is testable without starting a server. The rules:
/// - loopback without `--rules`: allow everything and accept emulator tokens, as the Firebase emulator does;
/// - `--emulator`: emulator token handling, with or without rules;
/// - a non-loopback address needs `--rules` or an explicit `--insecure-allow-all`;
/// - otherwise unsigned tokens and `owner` are refused.
public struct SecurityPosture: Sendable, Equatable {
    public struct Options: Sendable {
        /// The address `serve` binds (`127.0.0.1`, `::1`, `0.0.0.0`, a host name…).
        public var bindAddress = "127.0.0.1"
        /// `--rules FILE` was given.
        public var hasRules = false
        /// `--emulator`.
        public var emulator = false
        /// `--insecure-allow-all`.
        public var insecureAllowAll = false
        /// Any of `--auth-keys`, `--auth-secret`, `--admin-key-file`, `--service-account`: some credential can be
        /// verified.
        public var hasVerifiableCredentials = false
        /// The emails of the `--service-account` keys.
        public var serviceAccounts: [String] = []
        /// `--signed-url-host`: the hosts signed URLs are checked against besides the server's own.
        public var signedURLHosts: [String] = []

        public init() {}
    }

    /// Emulator token handling: set ``TokenVerifier/Configuration-swift.struct/emulator``.
    public var emulatorTokens: Bool
    /// No rules: every request is allowed (`AllowAllPolicy`).
    public var allowAll: Bool
    /// What the startup banner must say about security, one line each.
    public var notices: [String]

    /// The posture for `options`, or an ``AuthError/Code-swift.struct/invalidConfiguration`` explaining which
    /// flag is missing or contradictory.
    public static func decide(_ options: Options) throws(AuthError) -> SecurityPosture {
        let loopback = isLoopback(options.bindAddress)
        if options.hasRules && options.insecureAllowAll {
            throw AuthError(.invalidConfiguration, "--rules and --insecure-allow-all contradict each other; give one")
        }
        if !loopback && !options.hasRules && !options.insecureAllowAll {
            throw AuthError(
                .invalidConfiguration,
                "binding \(options.bindAddress), which is not a loopback address, requires --rules FILE "
                    + "(or --insecure-allow-all to allow every request from the network)")
        }
        let allowAll = !options.hasRules
        let emulatorTokens = options.emulator || (loopback && !options.hasRules && !options.insecureAllowAll)
        var notices: [String] = []
        if allowAll {
            notices.append(
                loopback
                    ? "no --rules: every request is allowed, as in the Firebase emulator (loopback only)"
                    : "--insecure-allow-all: every request from the network is allowed; no rules are enforced")
        }
        if emulatorTokens {
            notices.append(
                "emulator tokens: unsigned tokens are accepted without verification and 'owner' is the admin")
            if !loopback {
                notices.append(
                    "warning: emulator tokens on \(options.bindAddress): anyone who can connect can act as any user "
                        + "or as the admin")
            }
        } else if !options.hasVerifiableCredentials {
            notices.append(
                "no --auth-keys, --auth-secret, --admin-key-file or --service-account: every token is refused; "
                    + "requests are anonymous")
        }
        if !options.serviceAccounts.isEmpty {
            notices.append(
                "service accounts: \(options.serviceAccounts.joined(separator: ", ")); their access tokens (POST /token), "
                    + "signed URLs (signed for this server's address, a --public-url or "
                    + "\(options.signedURLHosts.joined(separator: ", "))) "
                    + "and POST policies are verified, and "
                    + (emulatorTokens
                        ? "then allowed everything, as every caller is in emulator mode"
                        : "bucket IAM policies and ACLs decide what they may do"))
        } else if emulatorTokens {
            notices.append(
                "signed URLs and POST policies: checked in everything but their signature, which needs the signer's "
                    + "key (no --service-account)")
        }
        return SecurityPosture(emulatorTokens: emulatorTokens, allowAll: allowAll, notices: notices)
    }

    /// Whether `address` can only be reached from this machine: `localhost`, `127.0.0.0/8`, `::1` (also bracketed
    /// or IPv4-mapped). Anything else, including host names that happen to resolve to loopback, counts as exposed.
    public static func isLoopback(_ address: String) -> Bool {
        var host = address.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        if host.hasPrefix("::ffff:") { host = String(host.dropFirst(7)) }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy(\.isASCII) && UInt8(octet) != nil
        }
    }
}
