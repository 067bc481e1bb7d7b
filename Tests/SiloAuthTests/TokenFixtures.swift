import Foundation
import SiloAuth
import SiloCore
@_spi(Testing) import SiloHashing
import SiloWire

/// Keys, clocks and token builders shared by the auth tests. Tokens are assembled by hand here (not through
/// SiloAuth) so that every field, including broken ones, is under the test's control.
enum Fixtures {
    /// Key generation takes tens of milliseconds, so the suites share these.
    static let googleKey = try! RSAPrivateKey()
    static let rotatedKey = try! RSAPrivateKey()
    static let strangerKey = try! RSAPrivateKey()

    static let kid = "google-key-1"
    static let rotatedKid = "google-key-2"
    static let project = "demo-silo"
    static let secret = Array("0123456789abcdef0123456789abcdef-dev-secret".utf8)
    /// 2025-06-15T15:06:40Z, a fixed "now" so expiry tests do not depend on the wall clock.
    static let nowSeconds: Int64 = 1_750_000_000
    static let now = Timestamp(microseconds: nowSeconds * 1_000_000)

    static func jwks(_ keys: [(String, RSAPrivateKey)] = [(kid, googleKey)]) -> String {
        let entries: [JSONValue] = keys.map { kid, key in
            let (n, e) = try! key.publicComponents()
            return .object([
                "kty": .string("RSA"), "alg": .string("RS256"), "use": .string("sig"), "kid": .string(kid),
                "n": .string(Base64.encodeURLSafe(n)), "e": .string(Base64.encodeURLSafe(e)),
            ])
        }
        return JSONValue.object(["keys": .array(entries)]).serializedString
    }

    static func x509(_ keys: [(String, RSAPrivateKey)] = [(kid, googleKey)]) -> String {
        var object = JSONObject()
        for (kid, key) in keys { object[kid] = .string(try! key.selfSignedCertificatePEM()) }
        return JSONValue.object(object).serializedString
    }

    /// The payload of a Firebase ID token as Firebase Authentication issues it, for `uid`, issued at `now`.
    static func firebaseClaims(uid: String = "alice-uid") -> JSONObject {
        [
            "name": .string("Alice"),
            "admin": .bool(true),
            "iss": .string("https://securetoken.google.com/\(project)"),
            "aud": .string(project),
            "auth_time": .number(nowSeconds - 300),
            "user_id": .string(uid),
            "sub": .string(uid),
            "iat": .number(nowSeconds - 60),
            "exp": .number(nowSeconds + 3540),
            "email": .string("alice@example.com"),
            "email_verified": .bool(true),
            "firebase": .object([
                "identities": .object(["email": .array([.string("alice@example.com")])]),
                "sign_in_provider": .string("password"),
            ]),
        ]
    }

    static func rs256Header(kid: String? = Fixtures.kid) -> JSONObject {
        var header: JSONObject = ["alg": .string("RS256"), "typ": .string("JWT")]
        if let kid { header["kid"] = .string(kid) }
        return header
    }

    static func segment(_ object: JSONObject) -> String { Base64.encodeURLSafe(JSONValue.object(object).serialized()) }

    static func signRS256(header: JSONObject = rs256Header(), claims: JSONObject, key: RSAPrivateKey = googleKey)
        -> String
    {
        let input = segment(header) + "." + segment(claims)
        return input + "." + Base64.encodeURLSafe(try! key.signRS256(Array(input.utf8)))
    }

    static func signHS256(header: JSONObject? = nil, claims: JSONObject, secret: [UInt8] = Fixtures.secret)
        -> String
    {
        let header = header ?? ["alg": .string("HS256"), "typ": .string("JWT")]
        let input = segment(header) + "." + segment(claims)
        return input + "."
            + Base64.encodeURLSafe(HMACSHA256.authenticationCode(key: secret, message: Array(input.utf8)))
    }

    /// A token shaped exactly like the Firebase Auth emulator's: `alg: none`, an empty signature, iat 0.
    static func emulatorToken(claims: JSONObject? = nil, headerKey: String = "type") -> String {
        let claims =
            claims ?? [
                "name": .string("Bob"),
                "email": .string("bob@example.com"),
                "email_verified": .bool(false),
                "auth_time": .number(0),
                "user_id": .string("bob-uid"),
                "firebase": .object(["identities": .object(JSONObject()), "sign_in_provider": .string("password")]),
                "iat": .number(0),
                "exp": .number(3600),
                "aud": .string(project),
                "iss": .string("https://securetoken.google.com/\(project)"),
                "sub": .string("bob-uid"),
            ]
        return segment(["alg": .string("none"), headerKey: .string("JWT")]) + "." + segment(claims) + "."
    }

    static func firebaseVerifier(json: String = jwks(), emulator: Bool = false) -> TokenVerifier {
        var configuration = TokenVerifier.Configuration()
        configuration.firebase = FirebaseIDTokens(projectID: project, keys: try! KeySet(json: json))
        configuration.emulator = emulator
        return TokenVerifier(configuration)
    }

    static func selfIssued(audience: String = project) -> SelfIssuedTokens {
        try! SelfIssuedTokens(secret: secret, audience: audience)
    }

    /// Firebase ID tokens, self-issued tokens and admin keys all at once: what a production deployment may run.
    static func fullVerifier(emulator: Bool = false) -> TokenVerifier {
        var configuration = TokenVerifier.Configuration()
        configuration.firebase = FirebaseIDTokens(projectID: project, keys: try! KeySet(json: jwks()))
        configuration.selfIssued = selfIssued()
        configuration.adminKeys = try! AdminKeys(keys: [adminKey])
        configuration.emulator = emulator
        return TokenVerifier(configuration)
    }

    static let adminKey = "silo-admin-7f3c9a1e5b2d4c6f8a0e"

    static func claims(of principal: Principal) -> JSONObject {
        try! JSONValue.parse(principal.claimsJSON).objectValue!
    }
}

/// A temporary directory removed when the test is done with it.
final class TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "silo-auth-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    @discardableResult
    func write(_ name: String, _ text: String) -> String {
        let file = path + "/" + name
        try! Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }
}
