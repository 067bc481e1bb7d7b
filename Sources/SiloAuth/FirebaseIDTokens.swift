/// What a Firebase ID token (RS256, signed by Google) is checked against: the project and Google's keys.
public struct FirebaseIDTokens: Sendable {
    /// The Firebase project id: the tokens' `aud`, and the last path segment of their `iss`.
    public var projectID: String
    /// Google's signing keys (`--auth-keys FILE`), looked up by the token's `kid`.
    public var keys: KeySet

    public init(projectID: String, keys: KeySet) {
        self.projectID = projectID
        self.keys = keys
    }

    /// `https://securetoken.google.com/<project>`.
    public var issuer: String { "https://securetoken.google.com/\(projectID)" }

    func claimChecks(clockSkewSeconds: Int64) -> ClaimChecks {
        ClaimChecks(issuer: issuer, audience: projectID, requiresAuthTime: true, clockSkewSeconds: clockSkewSeconds)
    }
}
