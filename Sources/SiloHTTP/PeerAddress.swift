/// The IP address a connection comes from, as 16 bytes (IPv4 as an IPv4-mapped IPv6 address), so it can key
/// per-client limits and quotas without allocating. Transports set it on each request head.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// From 16 bytes in network order.
    public init(bytes: some Collection<UInt8>) {
        precondition(bytes.count == 16, "an IPv6 address has 16 bytes")
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// `a.b.c.d` for IPv4 (mapped), else the eight groups in hex, uncompressed.
    public var description: String {
        if high == 0 && low >> 32 == 0xFFFF {
            let v4 = UInt32(truncatingIfNeeded: low)
            return "\(v4 >> 24).\(v4 >> 16 & 0xFF).\(v4 >> 8 & 0xFF).\(v4 & 0xFF)"
        }
        let groups = (0..<8).map { index -> String in
            let word = index < 4 ? high >> (48 - 16 * UInt64(index)) : low >> (48 - 16 * UInt64(index - 4))
            return String(word & 0xFFFF, radix: 16)
        }
        return groups.joined(separator: ":")
    }
}
