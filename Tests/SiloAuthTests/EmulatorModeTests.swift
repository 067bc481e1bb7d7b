import SiloAuth
import SiloCore
import SiloWire
import Testing

/// `--emulator`: tokens handled exactly as the Firebase emulators do, and nowhere else.
@Suite struct EmulatorModeTests {
    static func emulator() -> TokenVerifier {
        var configuration = TokenVerifier.Configuration()
        configuration.emulator = true
        return TokenVerifier(configuration)
    }

    @Test(arguments: ["type", "typ"])
    func mockTokensFromTheAuthEmulatorAreDecoded(headerKey: String) throws {
        // iat 0 and exp 3600 lie decades in the past: expiry is not checked for unsigned tokens.
        let token = Fixtures.emulatorToken(headerKey: headerKey)
        let principal = try #require(
            try Self.emulator().principal(authorizationHeader: "Firebase \(token)", at: .now()))
        #expect(principal.uid == "bob-uid")
        #expect(!principal.verified)
        #expect(!principal.isAdmin)
        let claims = Fixtures.claims(of: principal)
        #expect(claims["email"]?.stringValue == "bob@example.com")
        #expect(claims["email_verified"] == .bool(false))
        #expect(claims["firebase"]?.objectValue?["sign_in_provider"]?.stringValue == "password")
    }

    @Test func uidComesFromUserIDThenSub() throws {
        let both = Fixtures.emulatorToken(claims: ["user_id": .string("from-user-id"), "sub": .string("from-sub")])
        let subOnly = Fixtures.emulatorToken(claims: ["sub": .string("from-sub")])
        let neither = Fixtures.emulatorToken(claims: ["email": .string("x@example.com")])
        #expect(try Self.emulator().verify(token: both).uid == "from-user-id")
        #expect(try Self.emulator().verify(token: subOnly).uid == "from-sub")
        #expect(try Self.emulator().verify(token: neither).uid == nil)
    }

    @Test(arguments: ["Bearer owner", "Firebase owner", "bearer owner"])
    func ownerIsTheAdmin(header: String) throws {
        let principal = try #require(try Self.emulator().principal(authorizationHeader: header))
        #expect(principal.isAdmin)
        #expect(principal.uid == nil)
    }

    @Test(arguments: ["Bearer not-a-jwt", "Bearer a.b.c", "Basic dXNlcjpwYXNz", "Bearer", "Firebase e30.e30"])
    func undecodableCredentialsAreAnonymousAsInTheEmulator(header: String) throws {
        #expect(try Self.emulator().principal(authorizationHeader: header) == nil)
    }

    @Test func signedTokensWithoutAConfiguredKeyAreDecodedUnverified() throws {
        // A client still pointed at production Auth sends real Google-signed tokens; the emulator accepts them.
        let token = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        let result = try Self.emulator().verify(token: token, at: Fixtures.now)
        #expect(result.uid == "alice-uid")
        #expect(!result.verified)
    }

    @Test func configuredKeysAreStillEnforcedInEmulatorMode() throws {
        let verifier = Fixtures.fullVerifier(emulator: true)
        let forged = Fixtures.signRS256(claims: Fixtures.firebaseClaims(), key: Fixtures.strangerKey)
        #expect {
            try verifier.verify(token: forged, at: Fixtures.now)
        } throws: { ($0 as? AuthError)?.code == .badSignature }
        let genuine = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        #expect(try verifier.verify(token: genuine, at: Fixtures.now).verified)
        // Unsigned tokens and owner keep working alongside.
        #expect(try verifier.principal(authorizationHeader: "Bearer " + Fixtures.emulatorToken())?.uid == "bob-uid")
        #expect(try verifier.principal(authorizationHeader: "Bearer owner")?.isAdmin == true)
    }

    @Test func outsideEmulatorModeOwnerAndUnsignedTokensAreRefused() {
        let verifier = Fixtures.fullVerifier(emulator: false)
        for header in ["Bearer owner", "Firebase owner", "Bearer " + Fixtures.emulatorToken()] {
            #expect(throws: AuthError.self) { try verifier.principal(authorizationHeader: header) }
        }
    }
}
