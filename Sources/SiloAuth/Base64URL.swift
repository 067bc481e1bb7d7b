/// The base64url encoding of RFC 4648 §5 without padding, as JWTs use it (RFC 7515 §2).
///
/// Decoding is strict: only the URL-safe alphabet, no padding, no whitespace, and no non-zero leftover bits, so each
/// byte string has exactly one accepted spelling. (`SiloCore.Base64` is deliberately lenient for GCS fields.)
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            out.append(alphabet[Int(a >> 2)])
            out.append(alphabet[Int((a & 0x03) << 4 | (b ?? 0) >> 4)])
            if let b { out.append(alphabet[Int((b & 0x0F) << 2 | (c ?? 0) >> 6)]) }
            if let c { out.append(alphabet[Int(c & 0x3F)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        // A lone trailing character carries only 6 bits, less than a byte: never valid.
        guard text.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for ch in text {
            let value: UInt8
            switch ch {
            case 0x41...0x5A: value = ch - 0x41
            case 0x61...0x7A: value = ch - 0x61 + 26
            case 0x30...0x39: value = ch - 0x30 + 52
            case 0x2D: value = 62
            case 0x5F: value = 63
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((buffer >> UInt32(bits)) & 0xFF))
            }
        }
        // The bits left over after the last whole byte must be zero in the canonical spelling.
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
