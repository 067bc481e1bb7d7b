/// Percent-encoding of bucket and object names the way the Apple Firebase SDK puts them on the wire:
/// unreserved characters plus `! $ ' ( ) * , = : @` stay raw, everything else (including `/`, space, `&`, `+`, `;`,
/// `?`, `#`, `%`) is escaped; decode with SiloCore's `PercentCoding.decodePathComponent`. Shared by the SDK (which builds URLs) and by tests of the server (which must decode them).
public enum V0NameEncoding {
    /// Encodes a whole bucket or object name as one path segment (`a/b c` → `a%2Fb%20c`).
    public static func encodePathSegment(_ text: some StringProtocol) -> String {
        encode(text) { b in
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: true
            // ! $ ' ( ) * , = : @
            case 0x21, 0x24, 0x27, 0x28, 0x29, 0x2A, 0x2C, 0x3D, 0x3A, 0x40: true
            default: false
            }
        }
    }

    /// Encodes a query value. Only RFC 3986 unreserved characters stay raw, so `+` is always `%2B` (servers decode
    /// `+` in a query as a space) and `/` in a list prefix is escaped too.
    public static func encodeQueryValue(_ text: some StringProtocol) -> String {
        encode(text) { b in
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: true
            default: false
            }
        }
    }

    private static func encode(_ text: some StringProtocol, keep: (UInt8) -> Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for b in text.utf8 {
            if keep(b) {
                out.append(b)
            } else {
                out.append(0x25)
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
