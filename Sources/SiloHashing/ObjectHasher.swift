public import SiloCore

/// Size, MD5 and CRC-32C of a byte stream in one pass: what an upload computes as its bytes go to the blob store.
public final class ObjectHasher {
    private let md5: MD5Hasher
    private var crc = CRC32C()
    public private(set) var size: Int64 = 0

    public init() { md5 = MD5Hasher() }

    /// With CMD5's implementation `level` at most (``MD5Hasher/init(level:)``).
    init(md5Level: Int) { md5 = MD5Hasher(level: md5Level) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        md5.update(bytes, alongside: &crc)
        size += Int64(bytes.count)
    }

    public func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// The CRC-32C so far (it can be read mid-stream; MD5 cannot).
    public var crc32c: UInt32 { crc.value }

    /// Ends the stream. The hasher cannot be updated afterwards.
    public func finalize() -> BlobSummary {
        BlobSummary(size: size, md5: md5.finalize(), crc32c: crc.value)
    }
}
