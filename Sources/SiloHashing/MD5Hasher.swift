internal import CCrypto

/// Streaming MD5 through OpenSSL's EVP interface (GCS's `md5Hash`, the `Content-MD5` check).
///
/// Owns its `EVP_MD_CTX`; not thread-safe (one owner at a time), like the writers it accompanies.
public final class MD5Hasher {
    private let context: OpaquePointer
    private var finished = false

    public init() {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        self.context = context
        // Cannot fail for a built-in digest short of memory exhaustion.
        precondition(EVP_DigestInit_ex(context, EVP_md5(), nil) == 1, "EVP_DigestInit_ex(md5) failed")
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "MD5Hasher.update after finalize")
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(EVP_DigestUpdate(context, base, bytes.count) == 1, "EVP_DigestUpdate failed")
    }

    public func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// The 16-byte digest. The hasher cannot be updated afterwards.
    public func finalize() -> [UInt8] {
        precondition(!finished, "MD5Hasher.finalize called twice")
        finished = true
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1, "EVP_DigestFinal_ex failed")
        return Array(digest.prefix(Int(length)))
    }

    /// MD5 of `bytes` in one call.
    public static func digest(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        let hasher = MD5Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }
}
