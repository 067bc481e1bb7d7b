internal import CMD5

/// Streaming MD5 (GCS's `md5Hash`, the `Content-MD5` check), by CMD5: about 5% faster than libcrypto's on a single
/// stream, and able to fold CRC-32C into the same pass (``ObjectHasher``). Measured in bench/results/upload.md.
///
/// Not thread-safe (one owner at a time), like the writers it accompanies.
public final class MD5Hasher {
    private var context = cmd5_context()
    private var finished = false

    public init() { cmd5_init(&context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "MD5Hasher.update after finalize")
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        cmd5_update(&context, base, bytes.count)
    }

    public func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// `update(bytes)` and `crc.update(bytes)` in one pass over the bytes where the CPU has a CRC-32C instruction.
    func update(_ bytes: UnsafeRawBufferPointer, alongside crc: inout CRC32C) {
        precondition(!finished, "MD5Hasher.update after finalize")
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        if !cmd5_update_crc32c(&context, base, bytes.count, &crc.state) {
            cmd5_update(&context, base, bytes.count)
            crc.update(bytes)
        }
    }

    /// The 16-byte digest. The hasher cannot be updated afterwards.
    public func finalize() -> [UInt8] {
        precondition(!finished, "MD5Hasher.finalize called twice")
        finished = true
        return [UInt8](unsafeUninitializedCapacity: 16) { digest, count in
            cmd5_final(&context, digest.baseAddress!)
            count = 16
        }
    }

    /// MD5 of `bytes` in one call.
    public static func digest(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        let hasher = MD5Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }
}
