public import SiloCore
import SiloHashing

/// The pieces of GCS's V4 signing process (`GOOG4-RSA-SHA256`, `GOOG4-HMAC-SHA256`), pure functions of the request, so the test vectors
/// of google-cloud-storage can check them one by one:
///
/// ```
/// canonical request = METHOD \n PATH \n CANONICAL-QUERY \n CANONICAL-HEADERS \n SIGNED-HEADERS \n PAYLOAD
/// string to sign    = ALGORITHM \n X-Goog-Date \n DATE/REGION/storage/goog4_request \n hex(SHA-256(canonical))
/// ```
///
/// PATH is the path exactly as the client sent it (still percent-encoded); the canonical query is every parameter but
/// `X-Goog-Signature`, names and values percent-encoded except RFC 3986's unreserved characters, sorted; each
/// canonical header line is `name:value` with the name lowercased and the value trimmed, inner runs of whitespace
/// collapsed to one space, repeated fields joined with `,`. PAYLOAD is `UNSIGNED-PAYLOAD` unless the client signed
/// `x-goog-content-sha256`, whose value then stands there.
public enum GoogleV4Signing {
    public static let rsaAlgorithm = "GOOG4-RSA-SHA256"
    public static let hmacAlgorithm = "GOOG4-HMAC-SHA256"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// Seven days, GCS's limit on `X-Goog-Expires`.
    public static let maxExpiresSeconds: Int64 = 604_800

    /// `name=value` pairs, encoded, sorted by encoded name then value, joined with `&`; `X-Goog-Signature` (in any
    /// case) left out.
    public static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        let encoded: [(name: String, value: String)] = query.filter { $0.name.lowercased() != "x-goog-signature" }
            .map { (PercentCoding.encodeComponent($0.name), PercentCoding.encodeComponent($0.value)) }
        // Encoded text is ASCII, so String order is byte order.
        let sorted = encoded.sorted { a, b in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// A header value as it enters the canonical request: trimmed, runs of spaces and tabs collapsed to one space.
    public static func canonicalHeaderValue(_ raw: String) -> String {
        var out: [UInt8] = []
        var pendingSpace = false
        for byte in raw.utf8 {
            if byte == 0x20 || byte == 0x09 {
                pendingSpace = !out.isEmpty
                continue
            }
            if pendingSpace { out.append(0x20) }
            pendingSpace = false
            out.append(byte)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The canonical request. `headers` holds each signed header's value (already chosen: for `host`, the host the
    /// URL was signed for), in the order of `signedHeaders`.
    public static func canonicalRequest(
        method: String, path: String, query: [(name: String, value: String)],
        headers: [(name: String, value: String)], payload: String
    ) -> String {
        var lines = [method, path, canonicalQuery(query)]
        lines += headers.map { "\($0.name):\(canonicalHeaderValue($0.value))" }
        lines.append("")
        lines.append(headers.map(\.name).joined(separator: ";"))
        lines.append(payload)
        return lines.joined(separator: "\n")
    }

    public static func stringToSign(
        algorithm: String = rsaAlgorithm, date: String, scope: String, canonicalRequest: String
    ) -> String {
        [algorithm, date, scope, Base16.encode(SHA256.digest(Array(canonicalRequest.utf8)))].joined(separator: "\n")
    }

    /// The `GOOG4-HMAC-SHA256` signing key of an HMAC secret for a credential scope
    /// (`DATE/REGION/storage/goog4_request`): HMAC-SHA256 chained over the scope's parts, starting from the key
    /// `GOOG4` + secret. The signature is then the hex HMAC-SHA256 of the string to sign under this key.
    public static func hmacSigningKey(secret: String, scope: String) -> [UInt8] {
        var key = Array("GOOG4\(secret)".utf8)
        for part in scope.split(separator: "/", omittingEmptySubsequences: false) {
            key = HMACSHA256.authenticationCode(key: key, message: Array(part.utf8))
        }
        return key
    }

    /// Lower- or upper-case hex to bytes; nil for anything else or an odd length.
    static func unhex(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 2)
        var index = 0
        while index < bytes.count {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// `YYYYMMDD'T'HHMMSS'Z'` (ISO 8601 basic, UTC) as a time; nil for anything else, impossible dates included.
    public static func parseDate(_ text: String) -> Timestamp? {
        let b = Array(text.utf8)
        guard b.count == 16, b[8] == UInt8(ascii: "T"), b[15] == UInt8(ascii: "Z"),
            b.indices.allSatisfy({ $0 == 8 || $0 == 15 || (0x30...0x39).contains(b[$0]) })
        else { return nil }
        let s = { (from: Int, count: Int) in String(decoding: b[from..<(from + count)], as: UTF8.self) }
        let rfc3339 = "\(s(0, 4))-\(s(4, 2))-\(s(6, 2))T\(s(9, 2)):\(s(11, 2)):\(s(13, 2))Z"
        // The parser accepts day 31 of any month; the round trip refuses what rolled over into the next month.
        guard let time = Timestamp(rfc3339: rfc3339), time.rfc3339.hasPrefix(String(rfc3339.dropLast())) else {
            return nil
        }
        return time
    }
}
