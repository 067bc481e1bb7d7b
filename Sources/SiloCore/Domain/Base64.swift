/// Standard base64 (RFC 4648 §4) with padding, as GCS uses for md5Hash, crc32c and etags.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            out.append(alphabet[Int(a >> 2)])
            out.append(alphabet[Int((a & 0x03) << 4 | (b ?? 0) >> 4)])
            out.append(b.map { alphabet[Int(($0 & 0x0F) << 2 | (c ?? 0) >> 6)] } ?? 0x3D)
            out.append(c.map { alphabet[Int($0 & 0x3F)] } ?? 0x3D)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes padded or unpadded standard or URL-safe base64; nil on any other character.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var out = [UInt8]()
        var buffer: UInt32 = 0
        var bits = 0
        var sawPadding = false
        for ch in text.utf8 {
            let value: UInt8
            switch ch {
            case 0x41...0x5A: value = ch - 0x41
            case 0x61...0x7A: value = ch - 0x61 + 26
            case 0x30...0x39: value = ch - 0x30 + 52
            case 0x2B, 0x2D: value = 62
            case 0x2F, 0x5F: value = 63
            case 0x3D:
                sawPadding = true
                continue
            default: return nil
            }
            if sawPadding { return nil }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((buffer >> UInt32(bits)) & 0xFF))
            }
        }
        return out
    }

    /// URL-safe form without padding, for opaque page tokens.
    public static func encodeURLSafe(_ bytes: some Collection<UInt8>) -> String {
        var s = encode(bytes)
        s = s.replacingOccurrences("+", "-").replacingOccurrences("/", "_")
        while s.hasSuffix("=") { s.removeLast() }
        return s
    }
}

extension String {
    fileprivate func replacingOccurrences(_ a: Character, _ b: Character) -> String {
        String(self.map { $0 == a ? b : $0 })
    }
}
