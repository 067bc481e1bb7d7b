public import SiloCore
import SiloHashing
public import SiloWire

/// HS256 tokens that Silo signs and checks itself, for deployments without Firebase Authentication and for
/// development (`silo token --uid U [--claims JSON]`).
///
/// A minted token is shaped like a Firebase ID token so rules written for Firebase work unchanged:
///
/// | claim | value |
/// | --- | --- |
/// | `iss` | `"silo"` (``issuer``) |
/// | `aud` | ``audience`` (the project id the server is configured with) |
/// | `sub`, `user_id` | the uid |
/// | `iat`, `auth_time` | the minting time |
/// | `exp` | `iat` + lifetime |
/// | `firebase` | `{"identities": {}, "sign_in_provider": "custom"}` |
/// | anything else | the custom claims, at the top level as Firebase puts them |
///
/// The header is `{"alg":"HS256","typ":"JWT"}`; there is no `kid`.
public struct SelfIssuedTokens: Sendable {
    /// `iss` of every self-issued token.
    public static let issuer = "silo"
    /// RFC 7518 §3.2: an HS256 key must be at least as long as the hash output.
    public static let minimumSecretBytes = 32
    /// Firebase's limit on the serialized size of custom claims.
    public static let maxCustomClaimsBytes = 1000
    /// Claims the token sets itself (and OIDC reserves), which custom claims may not override; Firebase refuses
    /// the same list.
    public static let reservedClaims: Set<String> = [
        "acr", "amr", "at_hash", "aud", "auth_time", "azp", "cnf", "c_hash", "exp", "firebase", "iat", "iss",
        "jti", "nbf", "nonce", "sub", "user_id",
    ]

    /// `aud` of minted tokens, and the only audience accepted.
    public var audience: String
    private let secret: [UInt8]

    public init(secret: [UInt8], audience: String) throws(AuthError) {
        guard secret.count >= Self.minimumSecretBytes else {
            throw AuthError(
                .invalidConfiguration,
                "the HS256 secret has \(secret.count) bytes; at least \(Self.minimumSecretBytes) are required")
        }
        guard !audience.isEmpty else {
            throw AuthError(.invalidConfiguration, "self-issued tokens need a non-empty audience (the project id)")
        }
        self.secret = secret
        self.audience = audience
    }

    /// Reads the secret from `path` (`--auth-secret FILE`). Trailing whitespace (the newline an editor or `echo`
    /// adds) is not part of the secret.
    public init(secretFile path: String, audience: String) throws(AuthError) {
        var bytes = try ConfigurationFile.contents(of: path, what: "the auth secret file")
        while let last = bytes.last, last == 0x20 || last == 0x09 || last == 0x0A || last == 0x0D { bytes.removeLast() }
        do {
            try self.init(secret: bytes, audience: audience)
        } catch {
            throw AuthError(.invalidConfiguration, "the auth secret file '\(path)' is unusable", cause: error)
        }
    }

    /// A signed token for `uid` with `claims` as custom claims, valid for `lifetimeSeconds` from `now`.
    public func mint(
        uid: String, claims: JSONObject = JSONObject(), lifetimeSeconds: Int64 = 3600, now: Timestamp = .now()
    ) throws(AuthError) -> String {
        guard !uid.isEmpty, uid.utf16.count <= ClaimChecks.maxSubjectLength else {
            throw AuthError(
                .invalidSubject,
                "the uid must be a non-empty string of at most \(ClaimChecks.maxSubjectLength) characters")
        }
        guard lifetimeSeconds > 0, lifetimeSeconds <= 366 * 86_400 else {
            throw AuthError(.invalidClaims, "the token lifetime must be between 1 second and 366 days")
        }
        if let reserved = claims.keys.first(where: { Self.reservedClaims.contains($0) }) {
            throw AuthError(.invalidClaims, "the custom claim '\(reserved)' is reserved")
        }
        guard Set(claims.keys).count == claims.members.count else {
            throw AuthError(.invalidClaims, "the custom claims repeat a name")
        }
        let customSize = JSONValue.object(claims).serialized().count
        guard customSize <= Self.maxCustomClaimsBytes else {
            throw AuthError(
                .invalidClaims,
                "the custom claims take \(customSize) bytes; at most \(Self.maxCustomClaimsBytes) are allowed")
        }

        let issuedAt = now.microseconds / 1_000_000
        var payload: JSONObject = [
            "iss": .string(Self.issuer),
            "aud": .string(audience),
            "auth_time": .number(issuedAt),
            "user_id": .string(uid),
            "sub": .string(uid),
            "iat": .number(issuedAt),
            "exp": .number(issuedAt + lifetimeSeconds),
            "firebase": .object(["identities": .object(JSONObject()), "sign_in_provider": .string("custom")]),
        ]
        payload.members += claims.members
        let header: JSONObject = ["alg": .string("HS256"), "typ": .string("JWT")]
        let signingInput =
            Base64URL.encode(JSONValue.object(header).serialized()) + "."
            + Base64URL.encode(JSONValue.object(payload).serialized())
        return signingInput + "." + Base64URL.encode(signature(of: Array(signingInput.utf8)))
    }

    /// ``mint(uid:claims:lifetimeSeconds:now:)`` with the custom claims as JSON text (`--claims '{"admin":true}'`).
    public func mint(
        uid: String, claimsJSON: String, lifetimeSeconds: Int64 = 3600, now: Timestamp = .now()
    ) throws(AuthError) -> String {
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(claimsJSON)
        } catch {
            throw AuthError(.invalidClaims, "the custom claims are not valid JSON", cause: error as? JSONParseError)
        }
        guard let object = parsed.objectValue else {
            throw AuthError(.invalidClaims, "the custom claims must be a JSON object")
        }
        return try mint(uid: uid, claims: object, lifetimeSeconds: lifetimeSeconds, now: now)
    }

    func signature(of signingInput: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: secret, message: signingInput)
    }

    /// Whether `signature` is this secret's HS256 signature of `signingInput`, compared in constant time.
    func isValid(signature: [UInt8], of signingInput: [UInt8]) -> Bool {
        HMACSHA256.isValid(signature, key: secret, message: signingInput)
    }

    func claimChecks(clockSkewSeconds: Int64) -> ClaimChecks {
        ClaimChecks(
            issuer: Self.issuer, audience: audience, requiresAuthTime: false, clockSkewSeconds: clockSkewSeconds)
    }
}
