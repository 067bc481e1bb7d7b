internal import CCrypto

/// HMAC-SHA256 (RFC 2104 with SHA-256), used to sign and check self-issued tokens.
public enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    public static func authenticationCode(key: some Sequence<UInt8>, message: some Sequence<UInt8>) -> [UInt8] {
        let key = Array(key)
        let keyLength = key.count
        // OpenSSL reads a null key pointer as "reuse the previous key", so an empty key needs a real address.
        let keyStorage = key.isEmpty ? [0] : key
        let message = Array(message)
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = keyStorage.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                let messagePointer = messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return HMAC(
                    EVP_sha256(), keyBytes.baseAddress, Int32(keyLength), messagePointer, messageBytes.count, &code,
                    &length)
            }
        }
        // HMAC with a built-in digest over memory fails only on allocation failure.
        precondition(result != nil, "HMAC(sha256) failed")
        return Array(code.prefix(Int(length)))
    }

    /// Whether `code` is the authentication code of `message` under `key`, compared in constant time.
    public static func isValid(
        _ code: some Sequence<UInt8>, key: some Sequence<UInt8>, message: some Sequence<UInt8>
    ) -> Bool {
        ConstantTime.equals(Array(code), authenticationCode(key: key, message: message))
    }
}
