internal import CISAL

/// Streaming CRC-32C (Castagnoli), GCS's `crc32c`, computed by ISA-L's `crc32_iscsi`.
public struct CRC32C: Sendable, Equatable {
    /// ISA-L leaves pre- and post-inversion to the caller: the running state starts at ~0 and is inverted on read.
    private var state: UInt32 = ~0

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        // crc32_iscsi takes an `int` length, so feed it in chunks that fit.
        let chunk = 1 << 30
        while remaining > 0 {
            let count = min(remaining, chunk)
            state = crc32_iscsi(
                UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self)), Int32(count), state)
            base += count
            remaining -= count
        }
    }

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// The checksum of everything fed so far.
    public var value: UInt32 { state ^ ~0 }

    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.value
    }

    /// Big-endian bytes, the order GCS base64-encodes for `crc32c`.
    public static func bigEndianBytes(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
