public import SiloCore
import SiloHashing
public import SiloWire

/// Turns an `Authorization` header into a ``SiloCore/Principal``, checking the token as configured.
///
/// Each algorithm is checked only against the key kind configured for it: RS256 against ``FirebaseIDTokens``'s RSA
/// keys, HS256 against ``SelfIssuedTokens``'s secret. A token cannot choose a different key kind, so RS256/HS256
/// key confusion cannot happen, and `alg: none` is refused unless ``Configuration-swift.struct/emulator`` is set.
///
/// Emulator mode behaves as the Firebase Storage emulator does: `owner` is the admin; unsigned tokens (and signed
/// ones whose algorithm has no key configured) are decoded without verification, expiry included, with the uid
/// taken from `user_id`, else `sub`; and a credential that does not decode at all is anonymous rather than an
/// error. Tokens whose algorithm does have a key configured are still verified in full.
public struct TokenVerifier: Sendable {
    public struct Configuration: Sendable {
        /// Accept Firebase ID tokens (RS256) for this project, checked against these keys.
        public var firebase: FirebaseIDTokens?
        /// Accept self-issued HS256 tokens signed with this secret.
        public var selfIssued: SelfIssuedTokens?
        /// Admin keys (`--admin-key-file`); a matching `Bearer` credential is the admin.
        public var adminKeys: AdminKeys?
        /// Firebase emulator token handling (`--emulator`, or loopback without rules). Never for exposed servers.
        public var emulator = false
        /// How far `exp`, `iat`, `nbf` and `auth_time` may be off, for clocks that disagree a little.
        public var clockSkewSeconds: Int64 = 60

        public init() {}
    }

    public let configuration: Configuration

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// The caller named by an `Authorization` header value.
    ///
    /// - Returns: nil for a missing or blank header (an anonymous request), and in emulator mode also for a
    ///   credential that does not decode.
    /// - Throws: ``AuthError`` for any credential that is refused; answer 401 (``AuthError/httpStatus``).
    /// - Parameter now: the time to check expiry against. A server re-deriving the principal of a resumable upload
    ///   at commit can pass the session's start time, so a token that expired mid-upload still commits.
    public func principal(authorizationHeader: String?, at now: Timestamp = .now()) throws(AuthError) -> Principal? {
        let header: AuthorizationHeader
        switch AuthorizationHeader.parse(authorizationHeader) {
        case .absent:
            return nil
        case .unsupportedScheme:
            if configuration.emulator { return nil }
            throw AuthError(.unsupportedScheme, "the Authorization scheme must be 'Firebase' or 'Bearer'")
        case .present(let parsed):
            header = parsed
        }
        let credential = header.credential
        guard !credential.isEmpty else {
            if configuration.emulator { return nil }
            throw AuthError(.malformedToken, "the Authorization header has a scheme but no credential")
        }
        if configuration.emulator && credential == "owner" {
            return admin(header, verified: false)
        }
        if let adminKeys = configuration.adminKeys, adminKeys.matches(credential) {
            return admin(header, verified: true)
        }
        let token: VerifiedToken
        do {
            token = try verify(token: credential, at: now)
        } catch  where configuration.emulator && error.code == .malformedToken {
            // The emulator maps undecodable tokens to an anonymous request.
            return nil
        }
        return Principal(
            scheme: header.scheme, credential: credential, uid: token.uid,
            claimsJSON: JSONValue.object(token.claims).serializedString, isAdmin: false, verified: token.verified)
    }

    /// Checks a bare token (no scheme) and returns its identity and claims.
    public func verify(token: String, at now: Timestamp = .now()) throws(AuthError) -> VerifiedToken {
        let jwt = try CompactJWT(parsing: token)
        let skew = configuration.clockSkewSeconds
        switch jwt.algorithm {
        case "RS256":
            if let firebase = configuration.firebase {
                guard let kid = jwt.keyID else { throw AuthError(.unknownKey, "the RS256 token has no 'kid'") }
                guard let key = firebase.keys.key(id: kid) else {
                    throw AuthError(.unknownKey, "no key with id \(Self.printable(kid)) is loaded")
                }
                guard key.verifyRS256(signature: jwt.signature, message: jwt.signingInput) else {
                    throw AuthError(.badSignature, "the token's RS256 signature does not verify")
                }
                let uid = try firebase.claimChecks(clockSkewSeconds: skew).check(jwt.claims, at: now)
                return VerifiedToken(uid: uid, claims: jwt.claims, algorithm: jwt.algorithm, verified: true)
            }
        case "HS256":
            if let selfIssued = configuration.selfIssued {
                guard selfIssued.isValid(signature: jwt.signature, of: jwt.signingInput) else {
                    throw AuthError(.badSignature, "the token's HS256 signature does not verify")
                }
                let uid = try selfIssued.claimChecks(clockSkewSeconds: skew).check(jwt.claims, at: now)
                return VerifiedToken(uid: uid, claims: jwt.claims, algorithm: jwt.algorithm, verified: true)
            }
        case "none":
            guard configuration.emulator else {
                throw AuthError(.unsignedToken, "unsigned tokens ('alg: none') are accepted only in emulator mode")
            }
        default:
            break
        }
        guard configuration.emulator else {
            throw AuthError(
                .unsupportedAlgorithm, "tokens signed with \(Self.printable(jwt.algorithm)) are not accepted here")
        }
        let uid = jwt.claims["user_id"]?.stringValue ?? jwt.claims["sub"]?.stringValue
        return VerifiedToken(uid: uid, claims: jwt.claims, algorithm: jwt.algorithm, verified: false)
    }

    private func admin(_ header: AuthorizationHeader, verified: Bool) -> Principal {
        Principal(
            scheme: header.scheme, credential: header.credential, uid: nil, claimsJSON: "{}", isAdmin: true,
            verified: verified)
    }

    /// A header value safe to quote in a message: short printable ASCII, else a placeholder.
    static func printable(_ value: String) -> String {
        guard value.utf8.count <= 64, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x27 }) else {
            return "(unprintable)"
        }
        return "'\(value)'"
    }
}

/// A token that passed the configured checks (or, in emulator mode, was only decoded).
public struct VerifiedToken: Sendable {
    /// `sub` for verified tokens; `user_id`, else `sub`, for tokens decoded in emulator mode.
    public var uid: String?
    /// Every claim of the payload (`request.auth.token` in rules).
    public var claims: JSONObject
    /// The header's `alg`.
    public var algorithm: String
    /// Whether the signature and claims were checked; false only for tokens decoded in emulator mode.
    public var verified: Bool
}
