#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PeerAddress {
    /// A numeric IPv4 (`192.0.2.1`, kept IPv4-mapped) or IPv6 (`2001:db8::1`) address; nil for anything else (names
    /// are not resolved).
    public init?(numeric text: String) {
        var bytes = [UInt8](repeating: 0, count: 16)
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes[10] = 0xFF
            bytes[11] = 0xFF
            withUnsafeBytes(of: v4) { for (index, byte) in $0.enumerated() { bytes[12 + index] = byte } }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            withUnsafeBytes(of: v6) { for (index, byte) in $0.enumerated() { bytes[index] = byte } }
        } else {
            return nil
        }
        self.init(bytes: bytes)
    }

    /// An IPv4 address (held IPv4-mapped, `::ffff:a.b.c.d`).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }

    /// `127.0.0.0/8` or `::1`: an address only this machine can reach.
    public var isLoopback: Bool {
        isIPv4 ? (low >> 24) & 0xFF == 127 : high == 0 && low == 1
    }
}

/// A range of addresses in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`; a bare address is a range of one), as an
/// operator names the proxies it trusts (`--trusted-proxies`). IPv4 ranges match IPv4 peers, which transports hold
/// IPv4-mapped.
public struct PeerNetwork: Hashable, Sendable, CustomStringConvertible {
    public let address: PeerAddress
    /// Leading bits that must match, over the 128-bit (IPv4-mapped) form.
    public let prefixLength: Int
    public let description: String

    /// Nil unless `text` is an address, optionally followed by `/` and a prefix length within its family's bits.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let parsed = PeerAddress(numeric: String(parts[0])) else { return nil }
        let bits = parsed.isIPv4 && !parts[0].contains(":") ? 32 : 128
        var length = bits
        if parts.count == 2 {
            guard (1...3).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let given = Int(parts[1]), given <= bits
            else { return nil }
            length = given
        }
        prefixLength = length + (128 - bits)
        address = Self.masked(parsed, prefixLength)
        description = text
    }

    public func contains(_ peer: PeerAddress) -> Bool { Self.masked(peer, prefixLength) == address }

    private static func masked(_ address: PeerAddress, _ length: Int) -> PeerAddress {
        func mask(_ bits: Int) -> UInt64 { bits <= 0 ? 0 : bits >= 64 ? .max : ~(UInt64.max >> UInt64(bits)) }
        return PeerAddress(high: address.high & mask(length), low: address.low & mask(length - 64))
    }
}

/// The end of a connection on this server: the address and port the client reached, as the transport's socket says
/// (not as the request's `Host` says). What the server is called for a request it cannot be told otherwise.
public struct LocalEndpoint: Hashable, Sendable {
    public var address: PeerAddress
    public var port: Int

    public init(address: PeerAddress, port: Int) {
        self.address = address
        self.port = port
    }
}
