import SiloAuth
import SiloCore
import SiloServerKit
import SiloWire

/// What GCS's XML API says, beyond the code its status implies, when it refuses a signed URL, a POST policy or a
/// caller IAM denies: its own `<Code>` and `<Message>`, the server's explanation as `<Details>`, and for a signature
/// that does not match the `<StringToSign>` (and `<CanonicalRequest>`) it was checked against.
package struct XMLErrorDetail {
    var code: String
    var message: String
    /// Rendered elements after `<Message>`.
    var elements: String

    static func of(_ error: StorageError) -> XMLErrorDetail? {
        if error.cause is AccessDenial {
            // An anonymous caller is asked to authenticate (401, the code of its status); any other is denied.
            guard error.code == .permissionDenied else { return nil }
            return XMLErrorDetail(
                code: "AccessDenied", message: "Access denied.", elements: element("Details", error.message))
        }
        guard let refusal = error.cause as? AuthError, let kind = kind(refusal.code) else { return nil }
        var elements = ""
        if let parameter = refusal.signedRequest?.parameter { elements += element("ParameterName", parameter) }
        elements += element("Details", refusal.message)
        if let text = refusal.signedRequest?.stringToSign { elements += element("StringToSign", text) }
        if let text = refusal.signedRequest?.canonicalRequest { elements += element("CanonicalRequest", text) }
        return XMLErrorDetail(code: kind.code, message: kind.message, elements: elements)
    }

    private static func kind(_ code: AuthError.Code) -> (code: String, message: String)? {
        switch code {
        case .malformedToken, .unsupportedAlgorithm:
            ("MalformedSecurityHeader", "The signature parameters are malformed.")
        case .expired: ("ExpiredToken", "The signed URL or policy has expired.")
        case .notYetValid: ("AccessDenied", "The signed URL is not valid yet.")
        case .badSignature, .unknownKey:
            ("SignatureDoesNotMatch", "The signature does not match the request it was checked against.")
        case .invalidClaims: ("InvalidPolicyDocument", "The form does not meet the conditions of its policy document.")
        default: nil
        }
    }

    private static func element(_ name: String, _ text: String) -> String {
        "<\(name)>\(XMLText.escape(text))</\(name)>"
    }
}

/// Marks a refusal by IAM or ACL, which the XML API answers as `AccessDenied` with the message as `<Details>`.
package struct AccessDenial: Error, Sendable {
    package init() {}
}
