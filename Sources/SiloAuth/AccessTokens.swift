public import SiloCore
import SiloHashing
import SiloWire

/// The OAuth 2.0 scopes that reach Cloud Storage, and what each lets a token do at most (IAM then decides within).
public enum StorageScope: Int, Sendable, Comparable {
    /// `devstorage.read_only`, `cloud-platform.read-only`: reads and listings.
    case readOnly
    /// `devstorage.read_write`: reads and writes of data, but no IAM policy or ACL changes.
    case readWrite
    /// `devstorage.full_control`, `cloud-platform`: anything IAM allows.
    case fullControl

    public static let names: [String: StorageScope] = [
        "https://www.googleapis.com/auth/devstorage.read_only": .readOnly,
        "https://www.googleapis.com/auth/cloud-platform.read-only": .readOnly,
        "https://www.googleapis.com/auth/devstorage.read_write": .readWrite,
        "https://www.googleapis.com/auth/devstorage.full_control": .fullControl,
        "https://www.googleapis.com/auth/cloud-platform": .fullControl,
    ]

    /// The widest storage scope among `scopes`; nil when none reaches Cloud Storage.
    public static func ceiling(of scopes: [String]) -> StorageScope? { scopes.compactMap { names[$0] }.max() }

    public static func < (a: StorageScope, b: StorageScope) -> Bool { a.rawValue < b.rawValue }
}

/// Short-lived bearer tokens for service accounts, issued by Silo's token endpoint.
///
/// A token is signed rather than stored: `silo1.` + base64url(JSON claims) + `.` + base64url(HMAC-SHA256), with a
/// secret drawn at random when the process starts. So checking one needs no lookup and issuing them costs no memory
/// (there is no table to bound), but tokens die with the process: after a restart clients get 401 and fetch a new
/// one, which google-auth does by itself. Each token names the account and its key id, so a token outlives neither
/// the account's registration nor a change of its key.
public struct AccessTokens: Sendable {
    /// Google's access tokens live an hour; so do these.
    public static let lifetimeSeconds: Int64 = 3600
    static let prefix = "silo1."
    /// Scopes a token may carry (google-cloud-storage asks for three).
    static let maxScopes = 16
    static let maxScopeBytes = 256

    private let secret: [UInt8]

    /// A fresh random secret (the default), or a fixed one for tests.
    public init(secret: [UInt8]? = nil) {
        var generator = SystemRandomNumberGenerator()
        self.secret = secret ?? (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Whether `credential` has the shape of a token from ``mint(for:scopes:now:)`` (so no other check applies).
    static func looksLikeToken(_ credential: String) -> Bool { credential.utf8.starts(with: prefix.utf8) }

    /// A token for `account` with `scopes`, valid for ``lifetimeSeconds`` from `now`.
    public func mint(for account: ServiceAccount, scopes: [String], now: Timestamp) -> String {
        let issued = now.microseconds / 1_000_000
        let claims: JSONObject = [
            "sub": .string(account.email), "kid": .string(account.keyID),
            "scope": .string(scopes.joined(separator: " ")), "iat": .number(issued),
            "exp": .number(issued + Self.lifetimeSeconds),
        ]
        let body = Self.prefix + Base64URL.encode(JSONValue.object(claims).serialized())
        return body + "." + Base64URL.encode(HMACSHA256.authenticationCode(key: secret, message: Array(body.utf8)))
    }

    /// The caller a token names, if it was issued by this process, has not expired, and its account is still
    /// registered with the same key.
    func verify(_ token: String, accounts: ServiceAccounts, at now: Timestamp) throws(AuthError) -> ServiceAccountCaller
    {
        let bytes = Array(token.utf8)
        guard bytes.count <= 4096, let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot > Self.prefix.utf8.count,
            let mac = Base64URL.decode(bytes[(dot + 1)...]),
            HMACSHA256.isValid(mac, key: secret, message: bytes[..<dot])
        else {
            throw AuthError(
                .badSignature,
                "the access token was not issued by this server (or by an earlier run of it: fetch a new one)")
        }
        guard let payload = Base64URL.decode(bytes[Self.prefix.utf8.count..<dot]),
            let claims = try? JSONValue.parse(payload).objectValue, let email = claims["sub"]?.stringValue,
            let kid = claims["kid"]?.stringValue, let scope = claims["scope"]?.stringValue,
            let expiry = claims["exp"]?.int64Value
        else { throw AuthError(.malformedToken, "the access token's claims are unreadable") }
        guard now.microseconds / 1_000_000 < expiry else {
            throw AuthError(.expired, "the access token has expired; fetch a new one")
        }
        guard let account = accounts.account(email), account.keyID == kid else {
            throw AuthError(.unknownKey, "the access token's service account is no longer registered with this key")
        }
        return ServiceAccountCaller(
            email: account.email, scopes: scope.split(separator: " ").map(String.init), credential: .accessToken)
    }
}
