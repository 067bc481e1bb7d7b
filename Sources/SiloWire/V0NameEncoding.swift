/// Percent-encoding of bucket and object names the way the Apple Firebase SDK puts them on the wire (wire spec §1.2):
/// unreserved characters plus `! $ ' ( ) * , = : @` stay raw, everything else (including `/`, space, `&`, `+`, `;`,
/// `?`, `#`, `%`) is escaped. Shared by the SDK (which builds URLs) and by tests of the server (which must decode them).
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

    /// Decodes `%XX` escapes once (`+` stays `+`); nil when an escape is malformed or the bytes are not UTF-8.
    public static func decode(_ text: some StringProtocol) -> String? {
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var i = 0
        func hexValue(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        while i < bytes.count {
            if bytes[i] == 0x25 {
                guard i + 2 < bytes.count, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
