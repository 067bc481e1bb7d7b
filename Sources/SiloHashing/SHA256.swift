internal import CCrypto

/// SHA-256 through OpenSSL's EVP interface (FIPS 180-4).
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        let input = Array(bytes)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &digest, &length, EVP_sha256(), nil)
        }
        // A built-in digest over memory fails only on allocation failure.
        precondition(ok == 1, "EVP_Digest(sha256) failed")
        return Array(digest.prefix(Int(length)))
    }
}
