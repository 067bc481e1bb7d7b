internal import CMD5

/// Streaming MD5 (GCS's `md5Hash`, the `Content-MD5` check), by CMD5: on a single stream 1.05x libcrypto's speed in
/// portable C, 1.19x with AVX-512, and able to fold CRC-32C into the same pass (``ObjectHasher``). Measured by
/// bench/md5.sh (bench/results/upload.md).
///
/// Not thread-safe (one owner at a time), like the writers it accompanies.
public final class MD5Hasher {
    private var context = cmd5_context()
    private var finished = false

    public init() { cmd5_init(&context) }

    /// A hasher that uses CMD5's implementation `level` at most (0 portable C, 1 with CRC-32C by instruction, 2 on
    /// AVX-512), so that tests can compare each level this CPU has with the others.
    init(level: Int) {
        cmd5_init(&context)
        context.level = min(context.level, Int32(level))
    }

    /// The implementation CMD5 chose for this CPU.
    static var level: Int { Int(MD5Hasher().context.level) }

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
            update(bytes)
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
