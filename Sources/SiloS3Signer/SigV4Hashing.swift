/// The two primitives SigV4 needs, supplied by the caller so this module stays free of C and of any crypto library.
public struct SigV4Hashing: Sendable {
    /// SHA-256 of the bytes (32 bytes out).
    public var sha256: @Sendable ([UInt8]) -> [UInt8]
    /// HMAC-SHA256 of `message` under `key` (32 bytes out).
    public var hmacSHA256: @Sendable (_ key: [UInt8], _ message: [UInt8]) -> [UInt8]

    public init(
        sha256: @escaping @Sendable ([UInt8]) -> [UInt8],
        hmacSHA256: @escaping @Sendable (_ key: [UInt8], _ message: [UInt8]) -> [UInt8]
    ) {
        self.sha256 = sha256
        self.hmacSHA256 = hmacSHA256
    }
}
