/// Where a server's HMAC keys are looked up when a `GOOG4-HMAC-SHA256` signature arrives: the keys live in the
/// metadata store (they are created and revoked at run time over the JSON API), which this module does not know.
public protocol HMACKeyring: Sendable {
    /// The active key `accessID` names, or nil when there is none (or it is inactive or deleted). Throws
    /// `.invalidConfiguration` when the keys cannot be read.
    func hmacKey(accessID: String) throws(AuthError) -> HMACSigningKey?
}

/// An HMAC key as a verifier needs it: the service account it acts for and its secret.
public struct HMACSigningKey: Sendable {
    public let email: String
    /// The secret as GCS hands it out (base64 text); the signing key derivation starts from its text.
    public let secret: String

    public init(email: String, secret: String) {
        self.email = email
        self.secret = secret
    }

    /// An HMAC key's access id: letters and digits (GCS's are `GOOG1E` and 55 more), at most 128.
    public static func isAccessID(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
    }
}
