public import SiloHashing
import SiloWire

/// A Google service account registered from its JSON key file (`silo serve --service-account FILE`).
///
/// Only the public half of the key is kept: the private key is parsed once to derive it and then dropped (the file's
/// bytes are overwritten, OpenSSL clears the private numbers when it frees them). Swift strings cannot be scrubbed,
/// so the copy of the PEM text inside the parsed JSON is freed, not zeroed.
public struct ServiceAccount: Sendable {
    /// `client_email`: the account's identity in IAM bindings (`serviceAccount:EMAIL`), in `iss` of its token
    /// requests and in the credential of the URLs it signs.
    public let email: String
    /// `private_key_id`: the `kid` its token requests carry.
    public let keyID: String
    /// `project_id`.
    public let projectID: String
    /// The public half of `private_key`.
    public let publicKey: RSAPublicKey

    public init(email: String, keyID: String, projectID: String, publicKey: RSAPublicKey) {
        self.email = email
        self.keyID = keyID
        self.projectID = projectID
        self.publicKey = publicKey
    }

    /// The members a key file may have: what Google's console and `gcloud iam service-accounts keys create` write.
    static let requiredMembers = ["type", "project_id", "private_key_id", "private_key", "client_email"]
    /// Google's optional members, and the two Rust's object_store reads from the same file to reach an emulator
    /// (`gcs_base_url`, `disable_oauth`), so one file serves both.
    static let optionalMembers: Set<String> = [
        "client_id", "auth_uri", "token_uri", "auth_provider_x509_cert_url", "client_x509_cert_url", "universe_domain",
        "gcs_base_url", "disable_oauth",
    ]
    /// Real key files are about 2.4 KiB.
    static let maxFileBytes = 64 << 10

    /// Reads and checks the key file at `path`.
    public init(keyFile path: String) throws(AuthError) {
        var bytes = try ConfigurationFile.contents(of: path, what: "the service account key file")
        defer { for index in bytes.indices { bytes[index] = 0 } }
        do {
            try self.init(keyJSON: bytes)
        } catch {
            throw AuthError(
                .invalidConfiguration, "the service account key file '\(path)' is unusable: \(error.message)",
                cause: error)
        }
    }

    /// Checks a key file's contents strictly: a JSON object of `"type": "service_account"` with the five required
    /// string members, nothing but Google's optional ones besides, an RSA key of at least 2048 bits.
    public init(keyJSON bytes: [UInt8]) throws(AuthError) {
        func bad(_ why: String) -> AuthError { AuthError(.invalidConfiguration, why) }
        guard bytes.count <= Self.maxFileBytes else { throw bad("a key file is at most \(Self.maxFileBytes) bytes") }
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes)
        } catch {
            throw AuthError(.invalidConfiguration, "not valid JSON", cause: error as? JSONParseError)
        }
        guard let object = document.objectValue else { throw bad("not a JSON object") }
        guard Set(object.keys).count == object.members.count else { throw bad("a member name is repeated") }
        for (key, value) in object.members {
            guard Self.requiredMembers.contains(key) || Self.optionalMembers.contains(key) else {
                throw bad("unknown member \(TokenVerifier.printable(key))")
            }
            guard
                value.stringValue != nil || (key == "disable_oauth" && (value == .bool(true) || value == .bool(false)))
            else {
                throw bad("'\(key)' is not a string")
            }
        }
        for key in Self.requiredMembers where object[key] == nil { throw bad("'\(key)' is missing") }
        guard object["type"]?.stringValue == "service_account" else {
            throw bad("'type' is not 'service_account' (only service account keys can be registered)")
        }
        let email = object["client_email"]?.stringValue ?? ""
        guard Self.isEmail(email) else { throw bad("'client_email' is not an email address") }
        let keyID = object["private_key_id"]?.stringValue ?? ""
        guard Self.isIdentifier(keyID, maxLength: 128) else {
            throw bad("'private_key_id' must be 1 to 128 printable ASCII characters")
        }
        let projectID = object["project_id"]?.stringValue ?? ""
        guard Self.isIdentifier(projectID, maxLength: 100) else {
            throw bad("'project_id' must be 1 to 100 printable ASCII characters")
        }
        let pem = Array((object["private_key"]?.stringValue ?? "").utf8)
        guard pem.starts(with: Array("-----BEGIN PRIVATE KEY-----".utf8)) else {
            throw bad("'private_key' is not an unencrypted PKCS#8 PEM key ('-----BEGIN PRIVATE KEY-----')")
        }
        let publicKey: RSAPublicKey
        do {
            publicKey = try RSAPublicKey(publicPartOfPrivateKeyPEM: pem)
        } catch {
            throw AuthError(.invalidConfiguration, "'private_key' is not a usable RSA key", cause: error)
        }
        self.init(email: email, keyID: keyID, projectID: projectID, publicKey: publicKey)
    }

    /// `local@domain` in printable ASCII without spaces, at most 254 characters (RFC 5321's path limit).
    static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return text.utf8.count <= 254 && parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".")
            && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".")
            && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }
    }

    static func isIdentifier(_ text: String, maxLength: Int) -> Bool {
        (1...maxLength).contains(text.utf8.count) && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}

/// The service accounts a server accepts, by email. Fixed at startup.
public struct ServiceAccounts: Sendable {
    private let byEmail: [String: ServiceAccount]

    public init(_ accounts: [ServiceAccount]) throws(AuthError) {
        var byEmail: [String: ServiceAccount] = [:]
        for account in accounts {
            guard byEmail.updateValue(account, forKey: account.email) == nil else {
                throw AuthError(.invalidConfiguration, "the service account \(account.email) is registered twice")
            }
        }
        self.byEmail = byEmail
    }

    /// Reads every key file (`--service-account`, repeatable).
    public init(keyFiles paths: [String]) throws(AuthError) {
        var accounts: [ServiceAccount] = []
        for path in paths { accounts.append(try ServiceAccount(keyFile: path)) }
        try self.init(accounts)
    }

    public var isEmpty: Bool { byEmail.isEmpty }
    public var emails: [String] { byEmail.keys.sorted() }

    public func account(_ email: String) -> ServiceAccount? { byEmail[email] }
}
