import SiloAuth
import SiloCore
import SiloWire
import Testing

@Suite struct KeySetTests {
    @Test func reloadPicksUpRotatedKeys() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("keys.json", Fixtures.x509())
        let keys = try KeySet(contentsOfFile: path)
        #expect(keys.keyIDs == [Fixtures.kid])
        var configuration = TokenVerifier.Configuration()
        configuration.firebase = FirebaseIDTokens(projectID: Fixtures.project, keys: keys)
        let verifier = TokenVerifier(configuration)
        let rotated = Fixtures.signRS256(
            header: Fixtures.rs256Header(kid: Fixtures.rotatedKid), claims: Fixtures.firebaseClaims(),
            key: Fixtures.rotatedKey)
        #expect(throws: AuthError.self) { try verifier.verify(token: rotated, at: Fixtures.now) }

        directory.write("keys.json", Fixtures.jwks([(Fixtures.rotatedKid, Fixtures.rotatedKey)]))
        #expect(try keys.reload() == 1)
        #expect(keys.keyIDs == [Fixtures.rotatedKid])
        #expect(try verifier.verify(token: rotated, at: Fixtures.now).uid == "alice-uid")
    }

    @Test func aBrokenFileOnReloadKeepsTheOldKeys() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("keys.json", Fixtures.jwks())
        let keys = try KeySet(contentsOfFile: path)
        for broken in ["", "{\"keys\": [", "{}", "{\"keys\": []}", "[]"] {
            directory.write("keys.json", broken)
            #expect(throws: AuthError.self) { try keys.reload() }
            #expect(keys.keyIDs == [Fixtures.kid])
        }
    }

    @Test func keySetFileErrorsNameTheFile() {
        #expect {
            try KeySet(contentsOfFile: "/nonexistent/silo-keys.json")
        } throws: { error in
            let error = error as! AuthError
            return error.code == .invalidConfiguration && error.message.contains("/nonexistent/silo-keys.json")
        }
    }

    @Test(arguments: [
        ("not JSON", "nope"),
        ("certificate not PEM", #"{"k1": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}"#),
        ("value not a string", #"{"k1": 42}"#),
        ("JWK without kid", #"{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}"#),
        ("JWK with a tiny modulus", #"{"keys": [{"kty": "RSA", "kid": "k", "n": "AQAB", "e": "AQAB"}]}"#),
        ("JWK without n", #"{"keys": [{"kty": "RSA", "kid": "k", "e": "AQAB"}]}"#),
        ("only non-RSA keys", #"{"keys": [{"kty": "EC", "kid": "k", "crv": "P-256", "x": "AA", "y": "AA"}]}"#),
    ])
    func unusableKeyFilesAreRefused(name: String, json: String) {
        #expect(throws: AuthError.self, "\(name)") { try KeySet(json: json) }
    }

    @Test func duplicateKeyIDsAreRefused() {
        #expect(throws: AuthError.self) {
            try KeySet(json: Fixtures.jwks([(Fixtures.kid, Fixtures.googleKey), (Fixtures.kid, Fixtures.rotatedKey)]))
        }
    }

    @Test func keysOfOtherKindsInAJWKSAreSkipped() throws {
        var document = try JSONValue.parse(Fixtures.jwks()).objectValue!
        var entries = document["keys"]!.arrayValue!
        entries.append(.object(["kty": .string("EC"), "kid": .string("ec-key"), "crv": .string("P-256")]))
        entries.append(.object(["kty": .string("RSA"), "kid": .string("enc-key"), "use": .string("enc")]))
        document["keys"] = .array(entries)
        let keys = try KeySet(json: JSONValue.object(document).serializedString)
        #expect(keys.keyIDs == [Fixtures.kid])
    }

    @Test func aKeySetWithoutAFileCannotReload() throws {
        #expect(throws: AuthError.self) { try KeySet(json: Fixtures.jwks()).reload() }
    }
}

@Suite struct SecretFileTests {
    @Test func theTrailingNewlineIsNotPartOfTheSecret() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("secret", String(decoding: Fixtures.secret, as: UTF8.self) + "\n")
        let fromFile = try SelfIssuedTokens(secretFile: path, audience: Fixtures.project)
        let token = try fromFile.mint(uid: "erin", now: Fixtures.now)
        // The in-memory secret (no newline) verifies what the file-loaded one signed.
        #expect(try Fixtures.fullVerifier().verify(token: token, at: Fixtures.now).uid == "erin")
    }

    @Test func shortOrMissingSecretsAreRefused() {
        let directory = TemporaryDirectory()
        let short = directory.write("short", "hunter2\n")
        for path in [short, directory.path + "/missing"] {
            #expect {
                try SelfIssuedTokens(secretFile: path, audience: Fixtures.project)
            } throws: { error in
                let error = error as! AuthError
                return error.code == .invalidConfiguration && !error.detailedDescription().contains("hunter2")
            }
        }
    }
}
