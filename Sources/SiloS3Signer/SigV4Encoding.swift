/// SigV4's encodings: RFC 3986 percent-encoding of everything but the unreserved characters, and hex.
public enum SigV4Encoding {
    private static let hexDigits = Array("0123456789ABCDEF".utf8)
    private static let lowerHexDigits = Array("0123456789abcdef".utf8)

    /// Percent-encodes every byte except `A-Z a-z 0-9 - . _ ~` (and `/` when `keepSlash`), with uppercase hex.
    public static func uriEncode(_ text: String, keepSlash: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The canonical URI of an S3 path: each segment encoded once, slashes kept, no dot-segment removal.
    public static func path(_ path: String) -> String {
        uriEncode(path.isEmpty ? "/" : path, keepSlash: true)
    }

    /// The canonical query string: names and values encoded, sorted by encoded name then value, joined by `&`;
    /// a parameter without a value still carries `=`.
    public static func canonicalQuery(_ items: [SigV4QueryItem]) -> String {
        items.map { (uriEncode($0.name), uriEncode($0.value)) }
            .sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Lowercase hex of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(lowerHexDigits[Int(byte >> 4)])
            out.append(lowerHexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
