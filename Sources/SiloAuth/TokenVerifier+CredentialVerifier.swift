public import SiloCore

extension TokenVerifier: CredentialVerifier {
    /// The server's seam: refusals become `.unauthenticated` (HTTP 401), configuration faults `.internalError`.
    /// Messages name the problem, never the token.
    public func authenticate(authorizationHeader: String?, at time: Timestamp) throws -> Principal? {
        do {
            return try principal(authorizationHeader: authorizationHeader, at: time)
        } catch {
            throw StorageError(error.httpStatus == 401 ? .unauthenticated : .internalError, error.message, cause: error)
        }
    }

    /// Emulator token handling, nothing verified: what `silo serve` does on loopback without rules, and what the
    /// Firebase emulator does.
    public static var emulator: TokenVerifier {
        var configuration = Configuration()
        configuration.emulator = true
        return TokenVerifier(configuration)
    }
}
