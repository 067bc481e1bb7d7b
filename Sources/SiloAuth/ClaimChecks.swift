internal import SiloCore
import SiloWire

/// The registered-claim checks shared by Firebase ID tokens and self-issued tokens (RFC 7519 §4.1).
struct ClaimChecks {
    var issuer: String
    var audience: String
    /// Firebase ID tokens always carry `auth_time`; self-issued tokens may omit it.
    var requiresAuthTime: Bool
    var clockSkewSeconds: Int64

    /// The longest uid Firebase Authentication allows.
    static let maxSubjectLength = 128

    /// Checks `claims` at `now` and returns the subject (the uid).
    func check(_ claims: JSONObject, at now: Timestamp) throws(AuthError) -> String {
        let seconds = Double(now.microseconds) / 1_000_000
        let skew = Double(clockSkewSeconds)

        let expiry = try Self.numericDate(claims, "exp", required: true)!
        guard seconds < expiry + skew else { throw AuthError(.expired, "the token has expired ('exp' is past)") }
        let issuedAt = try Self.numericDate(claims, "iat", required: true)!
        guard issuedAt <= seconds + skew else {
            throw AuthError(.notYetValid, "the token was issued in the future ('iat')")
        }
        if let notBefore = try Self.numericDate(claims, "nbf", required: false), notBefore > seconds + skew {
            throw AuthError(.notYetValid, "the token is not valid yet ('nbf')")
        }
        if let authTime = try Self.numericDate(claims, "auth_time", required: requiresAuthTime),
            authTime > seconds + skew
        {
            throw AuthError(.notYetValid, "the token's 'auth_time' is in the future")
        }

        // Audience and issuer are compared exactly: a string, never an array, as Firebase issues them.
        guard claims["aud"]?.stringValue == audience else {
            throw AuthError(.wrongAudience, "the token's 'aud' is not '\(audience)'")
        }
        guard claims["iss"]?.stringValue == issuer else {
            throw AuthError(.wrongIssuer, "the token's 'iss' is not '\(issuer)'")
        }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty,
            subject.utf16.count <= Self.maxSubjectLength
        else {
            throw AuthError(
                .invalidSubject,
                "the token's 'sub' must be a non-empty string of at most \(Self.maxSubjectLength) characters")
        }
        return subject
    }

    /// A NumericDate claim (seconds since the epoch, possibly fractional), or nil when absent and not required.
    static func numericDate(_ claims: JSONObject, _ name: String, required: Bool) throws(AuthError) -> Double? {
        guard let value = claims[name] else {
            if required { throw AuthError(.invalidClaims, "the token has no '\(name)' claim") }
            return nil
        }
        guard case .number(let literal) = value, let number = Double(literal), number.isFinite else {
            throw AuthError(.invalidClaims, "the token's '\(name)' claim is not a number")
        }
        return number
    }
}
