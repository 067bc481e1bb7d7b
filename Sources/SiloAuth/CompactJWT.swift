import SiloWire

/// A JWT in compact serialization (RFC 7519 §3), split and decoded but not yet trusted.
struct CompactJWT {
    /// Bounds the work done on a hostile header. Firebase ID tokens are about 1 KiB; custom claims add at most 1000
    /// bytes.
    static let maxLength = 16 * 1024

    let header: JSONObject
    let claims: JSONObject
    /// `base64url(header) "." base64url(payload)`, the bytes the signature covers.
    let signingInput: [UInt8]
    let signature: [UInt8]
    /// The header's `alg`, as written.
    let algorithm: String
    /// The header's `kid`, when present.
    let keyID: String?

    init(parsing token: String) throws(AuthError) {
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maxLength else {
            throw AuthError(.malformedToken, "the token is longer than \(Self.maxLength) bytes")
        }
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw AuthError(.malformedToken, "the token is not three dot-separated segments (JWS compact form)")
        }
        header = try Self.decodeObject(segments[0], part: "header")
        claims = try Self.decodeObject(segments[1], part: "payload")
        guard let signature = Base64URL.decode(segments[2]) else {
            throw AuthError(.malformedToken, "the token's signature is not valid base64url")
        }
        self.signature = signature
        signingInput = Array(bytes[..<segments[1].endIndex])

        guard let algorithm = header["alg"]?.stringValue else {
            throw AuthError(.malformedToken, "the token header has no string 'alg'")
        }
        self.algorithm = algorithm
        switch header["kid"] {
        case nil: keyID = nil
        case .string(let kid)?: keyID = kid
        default: throw AuthError(.malformedToken, "the token header's 'kid' is not a string")
        }
        // RFC 7515 §4.1.11: extensions marked critical must be understood, and we understand none.
        guard header["crit"] == nil else {
            throw AuthError(.malformedToken, "the token header has 'crit' extensions, which are not supported")
        }
    }

    private static func decodeObject(_ segment: ArraySlice<UInt8>, part: String) throws(AuthError) -> JSONObject {
        guard let decoded = Base64URL.decode(segment) else {
            throw AuthError(.malformedToken, "the token \(part) is not valid base64url")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(decoded)
        } catch {
            throw AuthError(.malformedToken, "the token \(part) is not valid JSON", cause: error as? JSONParseError)
        }
        guard let object = value.objectValue else {
            throw AuthError(.malformedToken, "the token \(part) is not a JSON object")
        }
        // Duplicate names invite disagreement about which one counts (this parser keeps the last; a rules engine
        // reading the claims JSON might take the first), so refuse them outright, as RFC 7515 §4 permits.
        guard Set(object.keys).count == object.members.count else {
            throw AuthError(.malformedToken, "the token \(part) repeats a member name")
        }
        return object
    }
}
