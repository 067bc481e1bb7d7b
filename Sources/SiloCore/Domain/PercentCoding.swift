/// Percent-decoding and -encoding of URL components, byte-exact.
public enum PercentCoding {
    /// Decodes `%XX` escapes once; `+` stays `+`. Nil if an escape is malformed or the result is not UTF-8.
    public static func decodePathComponent(_ text: some StringProtocol) -> String? {
        decode(text, plusIsSpace: false)
    }

    /// ``decodePathComponent(_:)`` of UTF-8 bytes that are whole characters (a piece of a String cut at ASCII).
    public static func decodePathComponent(utf8 bytes: UnsafeBufferPointer<UInt8>) -> String? {
        decode(utf8: bytes, plusIsSpace: false)
    }

    /// Decodes a query component form-style: `+` is a space, then `%XX` escapes.
    public static func decodeQueryComponent(_ text: some StringProtocol) -> String? {
        decode(text, plusIsSpace: true)
    }

    /// ``decodeQueryComponent(_:)`` of UTF-8 bytes that are whole characters (a piece of a String cut at ASCII).
    public static func decodeQueryComponent(utf8 bytes: UnsafeBufferPointer<UInt8>) -> String? {
        decode(utf8: bytes, plusIsSpace: true)
    }

    static func decode(_ text: some StringProtocol, plusIsSpace: Bool) -> String? {
        // Every request decodes its path's bucket and object this way: over the bytes, not a Substring's UTF8View.
        text.withUTF8Bytes { decode(utf8: $0, plusIsSpace: plusIsSpace) }
    }

    /// `bytes` are whole UTF-8 characters (a valid string or a piece of one cut at ASCII).
    private static func decode(utf8 bytes: UnsafeBufferPointer<UInt8>, plusIsSpace: Bool) -> String? {
        // Most components have no escape: they decode to themselves.
        guard let first = bytes.firstIndex(where: { $0 == 0x25 || (plusIsSpace && $0 == 0x2B) }) else {
            return String(decoding: bytes, as: UTF8.self)
        }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        out.append(contentsOf: bytes[..<first])
        var i = first
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x25 {
                guard i + 2 < bytes.count, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) else {
                    return nil
                }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(plusIsSpace && b == 0x2B ? 0x20 : b)
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// Encodes everything except RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`), like
    /// `encodeURIComponent` minus its extra marks: safe in a path segment and in a query value.
    public static func encodeComponent(_ text: some StringProtocol) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for b in text.utf8 {
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: out.append(b)
            default:
                out.append(0x25)
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}
