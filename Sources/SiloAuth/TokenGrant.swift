public import SiloCore
import SiloHashing
import SiloWire

/// The OAuth 2.0 JWT-bearer grant (RFC 7523 §2.1) a service account's client sends to its key's `token_uri`:
/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<RS256 JWT>`, answered with an access token
/// from ``AccessTokens``.
///
/// The assertion is checked as Google's token endpoint checks it: signed RS256 by the registered key of the account
/// its `iss` names (and `kid`, when present, is that key's id), `aud` a token endpoint, `iat`/`exp` at most an hour
/// apart and current, `scope` naming a Cloud Storage scope, no `sub` other than the account itself (Silo has no
/// domain-wide delegation) and no `target_audience` (it issues no ID tokens).
public struct TokenGrant: Sendable {
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// What clients write in `aud` whatever their `token_uri` says: google-auth always names Google's endpoint, older
    /// clients and Go's `jwt` package the key's `token_uri`. Accepting Google's names lets a key whose `token_uri`
    /// points at Silo work unchanged; a token endpoint's own URL is added by the caller.
    public static let googleAudiences: Set<String> = [
        "https://oauth2.googleapis.com/token", "https://www.googleapis.com/oauth2/v4/token",
        "https://accounts.google.com/o/oauth2/token",
    ]
    /// Google refuses assertions valid for longer than an hour.
    public static let maxAssertionLifetime: Double = 3600

    public let accounts: ServiceAccounts
    public let tokens: AccessTokens
    public var clockSkewSeconds: Int64 = 60

    public init(accounts: ServiceAccounts, tokens: AccessTokens) {
        self.accounts = accounts
        self.tokens = tokens
    }

    /// What the endpoint answers with.
    public struct Issued: Sendable {
        public var accessToken: String
        public var expiresIn: Int64
        public var account: String
        public var scopes: [String]
    }

    /// Checks `assertion` at `now` against `audiences` (``googleAudiences`` plus the endpoint's own URLs) and issues
    /// a token. Every refusal is an ``AuthError`` whose message says what was wrong, never the assertion.
    public func exchange(assertion: String, audiences: Set<String>, at now: Timestamp) throws(AuthError) -> Issued {
        let jwt = try CompactJWT(parsing: assertion)
        guard let issuer = jwt.claims["iss"]?.stringValue, let account = accounts.account(issuer) else {
            throw AuthError(.wrongIssuer, "the assertion's 'iss' is not a service account registered here")
        }
        try Self.check(jwt, signedBy: account, at: now, clockSkewSeconds: clockSkewSeconds)
        guard let audience = jwt.claims["aud"]?.stringValue, audiences.contains(audience) else {
            throw AuthError(.wrongAudience, "the assertion's 'aud' is not this token endpoint")
        }
        guard let scopes = try Self.scopes(jwt) else { throw AuthError(.invalidScope, "the assertion has no 'scope'") }
        return Issued(
            accessToken: tokens.mint(for: account, scopes: scopes, now: now), expiresIn: AccessTokens.lifetimeSeconds,
            account: account.email, scopes: scopes)
    }

    /// What every JWT a service account signs must be, whether it asks for a token or is one (self-signed): RS256 by
    /// `account`'s key (`kid`, when present, its id), `iat`/`exp` at most an hour apart and current, no `sub` other
    /// than the account, no `target_audience`.
    static func check(
        _ jwt: CompactJWT, signedBy account: ServiceAccount, at now: Timestamp, clockSkewSeconds: Int64
    ) throws(AuthError) {
        guard jwt.algorithm == "RS256" else {
            throw AuthError(.unsupportedAlgorithm, "the JWT must be signed with RS256")
        }
        if let kid = jwt.keyID, kid != account.keyID {
            throw AuthError(.unknownKey, "the JWT's 'kid' is not the registered key of \(account.email)")
        }
        guard account.publicKey.verifyRS256(signature: jwt.signature, message: jwt.signingInput) else {
            throw AuthError(.badSignature, "the JWT's signature does not verify with the key of \(account.email)")
        }
        let seconds = Double(now.microseconds) / 1_000_000
        let skew = Double(clockSkewSeconds)
        let issuedAt = try ClaimChecks.numericDate(jwt.claims, "iat", required: true)!
        let expiry = try ClaimChecks.numericDate(jwt.claims, "exp", required: true)!
        guard expiry > issuedAt, expiry - issuedAt <= maxAssertionLifetime else {
            throw AuthError(.invalidClaims, "the JWT's 'exp' must be after 'iat' and at most an hour later")
        }
        guard seconds < expiry + skew else { throw AuthError(.expired, "the JWT has expired ('exp' is past)") }
        guard issuedAt <= seconds + skew else {
            throw AuthError(.notYetValid, "the JWT was issued in the future ('iat')")
        }
        if let subject = jwt.claims["sub"], subject.stringValue != account.email {
            throw AuthError(
                .invalidSubject, "'sub' names another account: domain-wide delegation is not supported here")
        }
        guard jwt.claims["target_audience"] == nil else {
            throw AuthError(.invalidClaims, "ID tokens ('target_audience') are not issued here")
        }
    }

    /// The JWT's `scope`, split; nil without one. Throws unless it names a Cloud Storage scope, within bounds.
    static func scopes(_ jwt: CompactJWT) throws(AuthError) -> [String]? {
        guard let scope = jwt.claims["scope"]?.stringValue else { return nil }
        let scopes = scope.split(separator: " ").map(String.init)
        guard scopes.count <= AccessTokens.maxScopes, scopes.allSatisfy({ $0.utf8.count <= AccessTokens.maxScopeBytes })
        else {
            throw AuthError(.invalidScope, "the JWT asks for too many or too long scopes")
        }
        guard StorageScope.ceiling(of: scopes) != nil else {
            throw AuthError(.invalidScope, "the JWT's 'scope' names no Cloud Storage scope")
        }
        return scopes
    }
}
