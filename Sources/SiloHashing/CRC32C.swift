internal import CISAL

/// Streaming CRC-32C (Castagnoli), GCS's `crc32c`, computed by ISA-L's `crc32_iscsi`.
public struct CRC32C: Sendable, Equatable {
    /// ISA-L leaves pre- and post-inversion to the caller: the running state starts at ~0 and is inverted on read.
    /// (CMD5's fused pass updates it in the same form.)
    var state: UInt32 = ~0

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

extension CRC32C {
    /// The CRC-32C of `A` followed by `B`, from `crc(A)`, `crc(B)` and the length of `B` alone: what a composed
    /// object's checksum is made of without reading its bytes again.
    ///
    /// In the reflected representation CRC-32C uses, `crc(A‖B) = crc(A)·x^(8·|B|) ⊕ crc(B)` modulo the Castagnoli
    /// polynomial (the initial and final inversions cancel out). `x^(8·n)` is assembled from the powers
    /// `x^(2^k)`, so the cost grows with the number of bits in `n`, not with `n`.
    public static func combine(_ first: UInt32, _ second: UInt32, secondLength: Int64) -> UInt32 {
        precondition(secondLength >= 0, "CRC32C.combine with a negative length")
        guard secondLength > 0 else { return first ^ second }
        // x^(8n) = product of x^(2^(k+3)) over the set bits k of n.
        var power: UInt32 = 1 << 31  // x^0
        var n = UInt64(secondLength)
        var k = 3
        while n != 0 {
            if n & 1 != 0 { power = multiply(powersOfX[k], power) }
            n >>= 1
            k += 1
        }
        return multiply(power, first) ^ second
    }

    /// The reflected Castagnoli polynomial (x^32 is implied).
    private static let polynomial: UInt32 = 0x82F6_3B78

    /// `x^(2^k)` modulo the polynomial for k in 0...66: 3 plus the 64 bits of a length.
    private static let powersOfX: [UInt32] = {
        var table: [UInt32] = [1 << 30]  // x^1: bit 31 is x^0 in the reflected order
        for _ in 1..<67 { table.append(multiply(table[table.count - 1], table[table.count - 1])) }
        return table
    }()

    /// `a·b` modulo the polynomial, both in the reflected order (bit 31 holds the coefficient of x^0).
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var product: UInt32 = 0
        var shifted = b  // b·x^i for the bit of `a` being looked at
        var bit: UInt32 = 1 << 31
        while bit != 0 {
            if a & bit != 0 { product ^= shifted }
            shifted = shifted & 1 != 0 ? (shifted >> 1) ^ polynomial : shifted >> 1
            bit >>= 1
        }
        return product
    }
}
