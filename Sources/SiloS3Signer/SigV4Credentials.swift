/// The AWS access key that signs requests, with the session token of temporary (STS) credentials.
public struct SigV4Credentials: Sendable, Equatable {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// Sent as `x-amz-security-token` (and signed) when present.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }
}

extension SigV4Credentials: CustomStringConvertible {
    /// Names the key but never shows the secret or the token.
    public var description: String {
        "SigV4Credentials(accessKeyID: \(accessKeyID), secret: <redacted>\(sessionToken == nil ? "" : ", session token"))"
    }
}
