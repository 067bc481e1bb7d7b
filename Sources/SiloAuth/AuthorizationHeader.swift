/// An `Authorization` header value split into its scheme and credential.
struct AuthorizationHeader {
    /// `Firebase` (what the client SDKs send) or `Bearer` (REST clients, admin keys), spelled canonically.
    let scheme: String
    let credential: String

    /// The canonical spelling of each accepted scheme; schemes are case-insensitive (RFC 9110 §11.1).
    static let schemes = ["firebase": "Firebase", "bearer": "Bearer"]

    enum Parsed {
        /// No header, only whitespace, or `Bearer` with no token: an anonymous request.
        case absent
        /// A scheme other than `Firebase` or `Bearer`.
        case unsupportedScheme
        case present(AuthorizationHeader)
    }

    static func parse(_ value: String?) -> Parsed {
        guard let value else { return .absent }
        // Split on space and tab bytes, not Characters: a space followed by a combining mark is one Character that
        // is not a space.
        let isSpace = { (b: UInt8) in b == 0x20 || b == 0x09 }
        let bytes = value.utf8
        guard let start = bytes.firstIndex(where: { !isSpace($0) }) else { return .absent }
        let schemeEnd = bytes[start...].firstIndex(where: isSpace) ?? bytes.endIndex
        guard let scheme = schemes[value[start..<schemeEnd].lowercased()] else { return .unsupportedScheme }
        let credentialStart = bytes[schemeEnd...].firstIndex(where: { !isSpace($0) }) ?? bytes.endIndex
        var credentialEnd = bytes.endIndex
        while credentialEnd > credentialStart, isSpace(bytes[bytes.index(before: credentialEnd)]) {
            credentialEnd = bytes.index(before: credentialEnd)
        }
        // `Bearer` and nothing after it is how Rust's object_store (polars, obstore) asks anonymously: it sends the
        // header even when it has no token.
        if scheme == "Bearer" && credentialStart == credentialEnd { return .absent }
        return .present(AuthorizationHeader(scheme: scheme, credential: String(value[credentialStart..<credentialEnd])))
    }
}
