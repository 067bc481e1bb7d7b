import SiloAuth
import SiloCore
@_spi(Testing) import SiloHashing
import SiloWire
import Testing

/// One credential that must be refused, and the code it must be refused with.
struct Rejection: Sendable, CustomTestStringConvertible {
    var name: String
    var expected: AuthError.Code
    /// The whole `Authorization` header value.
    var header: @Sendable () -> String
    var verifier: @Sendable () -> TokenVerifier = { Fixtures.fullVerifier() }

    var testDescription: String { name }

    /// A Firebase ID token (signed by Google's key) with `edit` applied to its claims.
    static func claims(
        _ name: String, _ expected: AuthError.Code, _ edit: @escaping @Sendable (inout JSONObject) -> Void
    )
        -> Rejection
    {
        Rejection(name: name, expected: expected) {
            var claims = Fixtures.firebaseClaims()
            edit(&claims)
            return "Bearer " + Fixtures.signRS256(claims: claims)
        }
    }

    /// A self-issued token with `edit` applied to minted claims, re-signed with the right secret.
    static func selfIssued(
        _ name: String, _ expected: AuthError.Code, _ edit: @escaping @Sendable (inout JSONObject) -> Void
    ) -> Rejection {
        Rejection(name: name, expected: expected) {
            let minted = try! Fixtures.selfIssued().mint(uid: "carol", now: Fixtures.now)
            var claims = try! JSONValue.parse(Base64.decode(minted.split(separator: ".")[1])!).objectValue!
            edit(&claims)
            return "Bearer " + Fixtures.signHS256(claims: claims)
        }
    }

    static func raw(_ name: String, _ expected: AuthError.Code, _ header: @escaping @Sendable () -> String) -> Rejection
    {
        Rejection(name: name, expected: expected, header: header)
    }

    static let future = Fixtures.nowSeconds + 3600
    static let past = Fixtures.nowSeconds - 3600
    static var validFirebase: String { Fixtures.signRS256(claims: Fixtures.firebaseClaims()) }

    static let all: [Rejection] = [
        // Time.
        claims("expired", .expired) { $0["exp"] = .number(past) },
        claims("expired beyond the skew", .expired) { $0["exp"] = .number(Fixtures.nowSeconds - 61) },
        claims("issued in the future", .notYetValid) { $0["iat"] = .number(future) },
        claims("auth_time in the future", .notYetValid) { $0["auth_time"] = .number(future) },
        claims("nbf in the future", .notYetValid) { $0["nbf"] = .number(future) },
        claims("no exp", .invalidClaims) { $0["exp"] = nil },
        claims("no iat", .invalidClaims) { $0["iat"] = nil },
        claims("no auth_time on a Firebase token", .invalidClaims) { $0["auth_time"] = nil },
        claims("exp as a string", .invalidClaims) { $0["exp"] = .string("\(future)") },
        // Audience, issuer, subject.
        claims("wrong aud", .wrongAudience) { $0["aud"] = .string("other-project") },
        claims("aud as an array", .wrongAudience) { $0["aud"] = .array([.string(Fixtures.project)]) },
        claims("no aud", .wrongAudience) { $0["aud"] = nil },
        claims("wrong iss", .wrongIssuer) { $0["iss"] = .string("https://securetoken.google.com/other-project") },
        claims("self-issued iss on an RS256 token", .wrongIssuer) { $0["iss"] = .string(SelfIssuedTokens.issuer) },
        claims("empty sub", .invalidSubject) { $0["sub"] = .string("") },
        claims("no sub", .invalidSubject) { $0["sub"] = nil },
        claims("numeric sub", .invalidSubject) { $0["sub"] = .number(42) },
        claims("sub longer than 128", .invalidSubject) { $0["sub"] = .string(String(repeating: "u", count: 129)) },
        // Signatures and keys.
        raw("signed by another key", .badSignature) {
            "Bearer " + Fixtures.signRS256(claims: Fixtures.firebaseClaims(), key: Fixtures.strangerKey)
        },
        raw("payload changed after signing", .badSignature) {
            let parts = validFirebase.split(separator: ".")
            var claims = Fixtures.firebaseClaims()
            claims["sub"] = .string("mallory")
            return "Bearer \(parts[0]).\(Fixtures.segment(claims)).\(parts[2])"
        },
        raw("signature truncated", .badSignature) {
            let parts = validFirebase.split(separator: ".")
            let signature = Base64.decode(parts[2])!
            return "Bearer \(parts[0]).\(parts[1])." + Base64.encodeURLSafe(signature.prefix(200))
        },
        raw("empty signature on RS256", .badSignature) {
            "Bearer " + validFirebase.split(separator: ".")[0...1].joined(separator: ".") + "."
        },
        raw("unknown kid", .unknownKey) {
            "Bearer "
                + Fixtures.signRS256(header: Fixtures.rs256Header(kid: "not-loaded"), claims: Fixtures.firebaseClaims())
        },
        raw("no kid", .unknownKey) {
            "Bearer " + Fixtures.signRS256(header: Fixtures.rs256Header(kid: nil), claims: Fixtures.firebaseClaims())
        },
        raw("HS256 with the wrong secret", .badSignature) {
            "Bearer "
                + Fixtures.signHS256(
                    claims: Fixtures.firebaseClaims(), secret: Array("another-secret-of-at-least-32-bytes!".utf8))
        },
        selfIssued("self-issued for another audience", .wrongAudience) { $0["aud"] = .string("other-project") },
        selfIssued("self-issued with Firebase's issuer", .wrongIssuer) {
            $0["iss"] = .string("https://securetoken.google.com/\(Fixtures.project)")
        },
        selfIssued("self-issued and expired", .expired) { $0["exp"] = .number(past) },
        // Algorithms.
        raw("alg none outside emulator mode", .unsignedToken) { "Bearer " + Fixtures.emulatorToken() },
        raw("alg none with typ", .unsignedToken) { "Firebase " + Fixtures.emulatorToken(headerKey: "typ") },
        raw("alg RS512", .unsupportedAlgorithm) {
            var header = Fixtures.rs256Header()
            header["alg"] = .string("RS512")
            return "Bearer " + Fixtures.signRS256(header: header, claims: Fixtures.firebaseClaims())
        },
        raw("alg spelled rs256", .unsupportedAlgorithm) {
            var header = Fixtures.rs256Header()
            header["alg"] = .string("rs256")
            return "Bearer " + Fixtures.signRS256(header: header, claims: Fixtures.firebaseClaims())
        },
        raw("alg ES256", .unsupportedAlgorithm) {
            var header = Fixtures.rs256Header()
            header["alg"] = .string("ES256")
            return "Bearer " + Fixtures.signRS256(header: header, claims: Fixtures.firebaseClaims())
        },
        // Key confusion: an HS256 token whose HMAC key is Google's public key, the classic attack.
        Rejection(
            name: "HS256 keyed with the RSA public key, no secret configured", expected: .unsupportedAlgorithm,
            header: { "Bearer " + confusedToken() }, verifier: { Fixtures.firebaseVerifier() }),
        Rejection(
            name: "HS256 keyed with the RSA public key, a secret configured", expected: .badSignature,
            header: { "Bearer " + confusedToken() }),
        Rejection(
            name: "RS256 token where only HS256 is configured", expected: .unsupportedAlgorithm,
            header: { "Bearer " + validFirebase },
            verifier: {
                var configuration = TokenVerifier.Configuration()
                configuration.selfIssued = Fixtures.selfIssued()
                return TokenVerifier(configuration)
            }),
        Rejection(
            name: "any token where nothing is configured", expected: .unsupportedAlgorithm,
            header: { "Bearer " + validFirebase }, verifier: { TokenVerifier(TokenVerifier.Configuration()) }),
        // Malformed.
        raw("one segment", .malformedToken) { "Bearer abcdef" },
        raw("two segments", .malformedToken) { "Bearer abc.def" },
        raw("four segments", .malformedToken) { "Bearer " + validFirebase + ".abc" },
        raw("bad base64 in the header", .malformedToken) { "Bearer " + "ey!!" + validFirebase.drop { $0 != "." } },
        raw("padding in the payload", .malformedToken) {
            let parts = validFirebase.split(separator: ".")
            return "Bearer \(parts[0]).\(parts[1])==.\(parts[2])"
        },
        raw("standard base64 alphabet", .malformedToken) {
            let parts = validFirebase.split(separator: ".")
            return "Bearer \(parts[0]).\(parts[1]).\(parts[2])+/"
        },
        raw("non-canonical trailing bits", .malformedToken) {
            // "e30" is "{}"; "e31" decodes to the same byte with a non-zero leftover bit.
            "Bearer " + Fixtures.segment(Fixtures.rs256Header()) + ".e31.AAAA"
        },
        raw("payload not JSON", .malformedToken) {
            "Bearer " + Fixtures.segment(Fixtures.rs256Header()) + "." + Base64.encodeURLSafe(Array("not json".utf8))
                + ".AAAA"
        },
        raw("payload a JSON array", .malformedToken) {
            "Bearer " + Fixtures.segment(Fixtures.rs256Header()) + "." + Base64.encodeURLSafe(Array("[1,2]".utf8))
                + ".AAAA"
        },
        raw("header without alg", .malformedToken) {
            "Bearer " + Fixtures.segment(["typ": .string("JWT")]) + "." + Fixtures.segment(Fixtures.firebaseClaims())
                + ".AAAA"
        },
        raw("header with crit", .malformedToken) {
            var header = Fixtures.rs256Header()
            header["crit"] = .array([.string("exp")])
            return "Bearer " + Fixtures.signRS256(header: header, claims: Fixtures.firebaseClaims())
        },
        raw("duplicate claim names", .malformedToken) {
            let payload = #"{"sub":"alice","sub":"mallory"}"#
            return "Bearer " + Fixtures.segment(Fixtures.rs256Header()) + "."
                + Base64.encodeURLSafe(Array(payload.utf8))
                + ".AAAA"
        },
        raw("oversized token", .malformedToken) {
            var claims = Fixtures.firebaseClaims()
            claims["padding"] = .string(String(repeating: "p", count: 20_000))
            return "Bearer " + Fixtures.signRS256(claims: claims)
        },
        // (`Bearer` without one is anonymous: AcceptanceTests.)
        raw("scheme without a credential", .malformedToken) { "Firebase" },
        raw("owner outside emulator mode", .malformedToken) { "Bearer owner" },
        raw("wrong admin key", .malformedToken) { "Bearer silo-admin-7f3c9a1e5b2d4c6f8a0f" },
        raw("unsupported scheme", .unsupportedScheme) { "Basic " + validFirebase },
    ]

    static func confusedToken() -> String {
        let publicPEM = try! Fixtures.googleKey.publicKeyPEM()
        var header = Fixtures.rs256Header()
        header["alg"] = .string("HS256")
        return Fixtures.signHS256(header: header, claims: Fixtures.firebaseClaims(), secret: Array(publicPEM.utf8))
    }
}

@Suite struct RejectionTests {
    @Test(arguments: Rejection.all)
    func refusedWithTheRightCode(_ rejection: Rejection) {
        let header = rejection.header()
        do {
            let principal = try rejection.verifier().principal(authorizationHeader: header, at: Fixtures.now)
            Issue.record("accepted as \(String(describing: principal?.uid))")
        } catch {
            #expect(error.code == rejection.expected, "\(error.detailedDescription())")
            #expect(error.httpStatus == 401)
            expectNoSecrets(in: error, header: header)
        }
    }

    /// Neither the token nor any sizeable piece of it may appear in what an error prints.
    func expectNoSecrets(in error: AuthError, header: String) {
        let texts = [
            error.description, error.detailedDescription(), String(reflecting: error), "\(error)", error.message,
        ]
        let credential = String(header.split(separator: " ", maxSplits: 1).last ?? "")
        let pieces = [credential] + credential.split(separator: ".").map(String.init).filter { $0.count >= 8 }
        for text in texts {
            for piece in pieces where !piece.isEmpty {
                #expect(!text.contains(piece), "error text contains part of the token: \(error.code)")
            }
        }
    }

    @Test func everyRejectionWasExercised() {
        // Guards against a table edit silently dropping a case named in the issue.
        let codes = Set(Rejection.all.map(\.expected))
        #expect(
            codes == [
                .expired, .notYetValid, .invalidClaims, .wrongAudience, .wrongIssuer, .invalidSubject, .badSignature,
                .unknownKey, .unsignedToken, .unsupportedAlgorithm, .malformedToken, .unsupportedScheme,
            ])
    }
}
