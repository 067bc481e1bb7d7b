import SiloCore
import SiloWire

/// Reads `Authorization: Firebase <jwt>` / `Bearer <jwt>` into a ``Principal``.
///
/// Signatures are not verified here (that is the auth layer's job); this only extracts the identity the token
/// claims, the way the Firebase emulator does, so that sessions and rules can carry it.
enum CredentialParser {
    static func principal(from header: String?, emulatorAdmin: Bool) -> Principal? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2 else { return nil }
        let scheme = String(parts[0])
        guard equalsIgnoringCaseASCII(scheme, "Firebase") || equalsIgnoringCaseASCII(scheme, "Bearer") else {
            return nil
        }
        let credential = String(parts[1]).trimmingCharacters(in: " ")
        if emulatorAdmin && credential == "owner" {
            return Principal(
                scheme: scheme, credential: credential, uid: nil, claimsJSON: "{}", isAdmin: true, verified: false)
        }
        let segments = credential.split(separator: ".", omittingEmptySubsequences: false)
        var uid: String?
        var claims = "{}"
        if segments.count == 3, let payload = Base64.decode(segments[1]), let json = try? JSONValue.parse(payload),
            case .object(let object) = json
        {
            uid = object["user_id"]?.stringValue ?? object["sub"]?.stringValue
            claims = json.serializedString
        }
        return Principal(
            scheme: scheme, credential: credential, uid: uid, claimsJSON: claims, isAdmin: false, verified: false)
    }
}

func equalsIgnoringCaseASCII(_ a: String, _ b: String) -> Bool {
    a.lowercased() == b.lowercased()
}
