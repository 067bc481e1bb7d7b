/// Base64 (RFC 4648): standard with padding, as GCS uses for md5Hash, crc32c and etags; URL-safe without padding, for
/// page tokens and JWTs. One encoder and one decoder serve both alphabets; decoding is lenient for GCS fields and
/// strict for JWTs.
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard alphabet, padded.
    public static func encode(_ bytes: some Collection<UInt8>) -> String { encode(bytes, standard, padded: true) }

    /// URL-safe alphabet without padding (RFC 4648 §5), for opaque page tokens and JWTs (RFC 7515 §2).
    public static func encodeURLSafe(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, urlSafe, padded: false)
    }

    /// Decodes padded or unpadded standard or URL-safe base64; nil on any other character.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var sawPadding = false
        return decode(text.utf8) { ch in
            if ch == 0x3D {
                sawPadding = true
                return .skip
            }
            guard !sawPadding, let value = sextet(ch, plus: 0x2B, slash: 0x2F) ?? sextet(ch, plus: 0x2D, slash: 0x5F)
            else { return .invalid }
            return .value(value)
        }
    }

    /// Strict base64url: only the URL-safe alphabet, no padding, no whitespace, and no non-zero leftover bits, so each
    /// byte string has exactly one accepted spelling (what a JWT's signature check needs).
    public static func decodeURLSafeStrictly(_ text: some Collection<UInt8>) -> [UInt8]? {
        // A lone trailing character carries only 6 bits, less than a byte: never valid.
        guard text.count % 4 != 1 else { return nil }
        return decode(text, canonical: true) { sextet($0, plus: 0x2D, slash: 0x5F).map { .value($0) } ?? .invalid }
    }

    private static func encode(_ bytes: some Collection<UInt8>, _ alphabet: [UInt8], padded: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            out.append(alphabet[Int(a >> 2)])
            out.append(alphabet[Int((a & 0x03) << 4 | (b ?? 0) >> 4)])
            if let b { out.append(alphabet[Int((b & 0x0F) << 2 | (c ?? 0) >> 6)]) } else if padded { out.append(0x3D) }
            if let c { out.append(alphabet[Int(c & 0x3F)]) } else if padded { out.append(0x3D) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private enum Input {
        case value(UInt8)
        case skip
        case invalid
    }

    /// The 6 bits `ch` stands for in the alphabet whose last two characters are `plus` and `slash`.
    private static func sextet(_ ch: UInt8, plus: UInt8, slash: UInt8) -> UInt8? {
        switch ch {
        case 0x41...0x5A: ch - 0x41
        case 0x61...0x7A: ch - 0x61 + 26
        case 0x30...0x39: ch - 0x30 + 52
        case plus: 62
        case slash: 63
        default: nil
        }
    }

    /// `canonical`: the bits left over after the last whole byte must be zero.
    private static func decode(
        _ text: some Collection<UInt8>, canonical: Bool = false, _ classify: (UInt8) -> Input
    ) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for ch in text {
            switch classify(ch) {
            case .invalid: return nil
            case .skip: continue
            case .value(let value):
                buffer = buffer << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    out.append(UInt8((buffer >> UInt32(bits)) & 0xFF))
                }
            }
        }
        if canonical && buffer & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }
}
