/// An `Authorization` header value split into its scheme and credential.
struct AuthorizationHeader {
    /// `Firebase` (what the client SDKs send) or `Bearer` (REST clients, admin keys), spelled canonically.
    let scheme: String
    let credential: String

    /// The canonical spelling of each accepted scheme; schemes are case-insensitive (RFC 9110 §11.1).
    static let schemes = ["firebase": "Firebase", "bearer": "Bearer"]

    enum Parsed {
        /// No header, or only whitespace: an anonymous request.
        case absent
        /// A scheme other than `Firebase` or `Bearer`.
        case unsupportedScheme
        case present(AuthorizationHeader)
    }

    static func parse(_ value: String?) -> Parsed {
        guard let value else { return .absent }
        let isSpace = { (c: Character) in c == " " || c == "\t" }
        let trimmed = value.drop(while: isSpace)
        guard !trimmed.isEmpty else { return .absent }
        let schemeEnd = trimmed.firstIndex(where: isSpace) ?? trimmed.endIndex
        guard let scheme = schemes[trimmed[..<schemeEnd].lowercased()] else { return .unsupportedScheme }
        var credential = trimmed[schemeEnd...].drop(while: isSpace)
        while let last = credential.last, isSpace(last) { credential.removeLast() }
        return .present(AuthorizationHeader(scheme: scheme, credential: String(credential)))
    }
}
