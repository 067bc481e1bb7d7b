public import SiloCore
import SiloWire

/// A ``SiloCore/CredentialVerifier`` that knows service accounts, in front of another (the ``TokenVerifier`` with
/// its admin keys, Firebase tokens and emulator mode): `Bearer silo1.…` access tokens, JWTs a registered account
/// signed itself and signed URLs are its own; every other credential goes to the verifier behind it unchanged, so
/// admin keys and emulator mode behave exactly as without it.
public struct ServiceAccountCredentials: CredentialVerifier {
    public let authority: ServiceAccountAuthority
    public let next: any CredentialVerifier

    public init(_ authority: ServiceAccountAuthority, next: any CredentialVerifier) {
        self.authority = authority
        self.next = next
    }

    public func authenticate(authorizationHeader: String?, at time: Timestamp) throws -> Principal? {
        guard case .present(let header) = AuthorizationHeader.parse(authorizationHeader), header.scheme == "Bearer"
        else { return try next.authenticate(authorizationHeader: authorizationHeader, at: time) }
        do {
            if AccessTokens.looksLikeToken(header.credential) {
                let caller = try authority.caller(accessToken: header.credential, at: time)
                return Self.principal(caller, credential: header.credential)
            }
            // A JWT whose issuer is a registered account is that account's own token; any other goes on (Firebase
            // ID tokens, self-issued tokens, emulator tokens).
            if let caller = try authority.caller(selfSignedJWT: header.credential, at: time) {
                return Self.principal(caller, credential: header.credential)
            }
        } catch {
            throw StorageError(.unauthenticated, error.message, cause: error)
        }
        return try next.authenticate(authorizationHeader: authorizationHeader, at: time)
    }

    public func authenticate(signedRequest: SignedRequest, at time: Timestamp) throws -> Principal? {
        do {
            return try authority.signer(of: signedRequest, at: time).map { Self.principal($0, credential: "") }
        } catch {
            throw Self.storageError(error)
        }
    }

    /// A service account caller as a principal: verified, never the admin, with no uid (Security Rules see no
    /// `request.auth` for it; IAM decides on the GCS APIs). Its `email` claim makes it the owner of what it creates.
    public static func principal(_ caller: ServiceAccountCaller, credential: String) -> Principal {
        Principal(
            scheme: "Bearer", credential: credential, uid: nil,
            claimsJSON: JSONValue.object(["email": .string(caller.email)]).serializedString, isAdmin: false,
            verified: true, serviceAccount: caller)
    }

    /// A refused signed URL or POST policy in the server's terms, with the refusal kept as the cause (the XML API
    /// names GCS's error code after it): malformed, expired or unsupported is 400, a signature that does not match
    /// (or whose signer is unknown) or a URL not yet valid is 403.
    public static func storageError(_ error: AuthError) -> StorageError {
        switch error.code {
        case .invalidConfiguration:
            StorageError(.internalError, error.message, cause: error)
        case .malformedToken, .unsupportedAlgorithm, .expired, .invalidClaims:
            StorageError(.invalidArgument, error.message, cause: error)
        default:
            StorageError(.permissionDenied, error.message, cause: error)
        }
    }
}
