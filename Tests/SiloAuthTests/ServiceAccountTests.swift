import SiloAuth
import SiloCore
@_spi(Testing) import SiloHashing
import SiloTesting
import SiloWire
import Testing

/// Service account key files, the JWT-bearer token grant and the access tokens it issues.
@Suite struct ServiceAccountTests {
    static let alice = try! TestServiceAccount(email: "alice@silo-test.iam.gserviceaccount.com")
    static let mallory = try! TestServiceAccount(email: "mallory@silo-test.iam.gserviceaccount.com")
    static let now = Fixtures.now

    static func keyObject(_ account: TestServiceAccount = alice) throws -> JSONObject {
        try JSONValue.parse(account.keyJSON()).objectValue!
    }

    static func parse(_ object: JSONObject) throws -> ServiceAccount {
        try ServiceAccount(keyJSON: JSONValue.object(object).serialized())
    }

    @Test("a key file as Google writes it registers its account, and only its public key is kept")
    func keyFile() throws {
        let account = try Self.parse(Self.keyObject())
        #expect(account.email == Self.alice.email)
        #expect(account.keyID == Self.alice.keyID)
        #expect(account.projectID == "silo-test")
        let assertion = try Self.alice.jwt(["iss": .string("x")])
        let parts = assertion.split(separator: ".")
        let signature = try #require(Base64.decode(String(parts[2])))
        #expect(
            account.publicKey.verifyRS256(
                signature: signature, message: Array(parts[0...1].joined(separator: ".").utf8)))
    }

    @Test("a key file that does not pass says which file and why; one that does registers from disk")
    func keyFileOnDisk() throws {
        let directory = TemporaryDirectory()
        var object = try Self.keyObject()
        let good = directory.write("good.json", JSONValue.object(object).serializedString)
        #expect(try ServiceAccounts(keyFiles: [good]).emails == [Self.alice.email])
        object["private_key_password"] = .string("x")
        let bad = directory.write("bad.json", JSONValue.object(object).serializedString)
        do {
            _ = try ServiceAccounts(keyFiles: [good, bad])
            Issue.record("an unknown member was accepted")
        } catch {
            #expect(
                error.message.contains("bad.json") && error.message.contains("unknown member 'private_key_password'"))
        }
        #expect(throws: AuthError.self) { try ServiceAccounts(keyFiles: [directory.path + "/missing.json"]) }
    }

    @Test(
        "key files are checked strictly",
        arguments: [
            "type", "client_email", "private_key", "private_key_id", "project_id",
        ])
    func missingMember(_ name: String) throws {
        var object = try Self.keyObject()
        object[name] = nil
        #expect(throws: AuthError.self) { try Self.parse(object) }
    }

    @Test("wrong types, unknown members, other key kinds and weak keys are refused")
    func refusedKeyFiles() throws {
        var cases: [(String, JSONObject)] = []
        var object = try Self.keyObject()
        object["type"] = .string("authorized_user")
        cases.append(("another credential type", object))
        object = try Self.keyObject()
        object["client_email"] = .string("not an email")
        cases.append(("a bad email", object))
        object = try Self.keyObject()
        object["private_key_id"] = .number(7)
        cases.append(("a number for a string", object))
        object = try Self.keyObject()
        object["private_key_password"] = .string("x")
        cases.append(("an unknown member", object))
        object = try Self.keyObject()
        object["private_key"] = .string(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")
        cases.append(("an encrypted key", object))
        object = try Self.keyObject()
        object["private_key"] = .string("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")
        cases.append(("garbage", object))
        object = try Self.keyObject()
        let weak = try RSAPrivateKey(bits: 1024)
        object["private_key"] = .string(try weak.privateKeyPEM())
        cases.append(("a 1024-bit key", object))
        for (what, object) in cases {
            #expect(throws: AuthError.self, "\(what)") { try Self.parse(object) }
        }
        #expect(throws: AuthError.self) { try ServiceAccount(keyJSON: Array("[]".utf8)) }
        let account = try Self.parse(Self.keyObject())
        #expect(throws: AuthError.self, "the same account twice") { try ServiceAccounts([account, account]) }
    }

    @Test(
        "the banner says what signed URLs get: verified for registered accounts, else in emulator mode all but the signature"
    )
    func bannerNotices() throws {
        var options = SecurityPosture.Options()
        let emulator = try SecurityPosture.decide(options)
        #expect(
            emulator.notices.contains {
                $0.contains("signed URLs and POST policies: checked in everything but their signature")
            })
        options.hasRules = true
        options.hasVerifiableCredentials = true
        options.serviceAccounts = [Self.alice.email]
        options.signedURLHosts = ["storage.googleapis.com"]
        let secured = try SecurityPosture.decide(options)
        let notice = try #require(secured.notices.first { $0.hasPrefix("service accounts:") })
        #expect(notice.contains(Self.alice.email) && notice.contains("storage.googleapis.com"))
        #expect(!secured.notices.contains { $0.contains("everything but their signature") })
    }

    // MARK: The token grant

    static func grant() throws -> TokenGrant {
        TokenGrant(accounts: try ServiceAccounts([Self.alice.account()]), tokens: AccessTokens(secret: Fixtures.secret))
    }

    static let audiences = TokenGrant.googleAudiences.union(["http://127.0.0.1:9199/token"])

    @Test("google-auth's assertion gets a one-hour Bearer token that names the account and its scopes")
    func grantIssuesToken() throws {
        let grant = try Self.grant()
        let issued = try grant.exchange(
            assertion: try Self.alice.jwt(Self.alice.assertionClaims(now: Self.now)), audiences: Self.audiences,
            at: Self.now)
        #expect(issued.expiresIn == 3600)
        #expect(issued.account == Self.alice.email)
        let caller = try ServiceAccountAuthority(accounts: grant.accounts, tokens: grant.tokens)
            .caller(accessToken: issued.accessToken, at: Self.now)
        #expect(caller.email == Self.alice.email)
        #expect(caller.scopes == ["https://www.googleapis.com/auth/devstorage.full_control"])
        #expect(caller.credential == .accessToken)
        // The key's own token_uri as audience, and no kid at all, are fine too.
        let claims = Self.alice.assertionClaims(now: Self.now, audience: "http://127.0.0.1:9199/token")
        _ = try grant.exchange(
            assertion: try Self.alice.jwt(claims, kid: .some(nil)), audiences: Self.audiences, at: Self.now)
    }

    @Test("assertions are refused for each thing Google's endpoint checks")
    func grantRefusals() throws {
        let grant = try Self.grant()
        let now = Self.now
        let good = Self.alice.assertionClaims(now: now)
        func refused(_ code: AuthError.Code, _ what: String, _ token: String) {
            expectRefusal(code, what) { try grant.exchange(assertion: token, audiences: Self.audiences, at: now) }
        }
        refused(.badSignature, "signed by another key", try Self.alice.jwt(good, signer: Self.mallory))
        refused(.unknownKey, "another kid", try Self.alice.jwt(good, kid: "not-the-key"))
        refused(.wrongIssuer, "an unknown account", try Self.mallory.jwt(Self.mallory.assertionClaims(now: now)))
        var claims = good
        claims["aud"] = .string("https://elsewhere.example/token")
        refused(.wrongAudience, "another audience", try Self.alice.jwt(claims))
        claims = good
        claims["exp"] = .number(now.microseconds / 1_000_000 + 3601)
        refused(.invalidClaims, "longer than an hour", try Self.alice.jwt(claims))
        claims = Self.alice.assertionClaims(now: Timestamp(microseconds: now.microseconds - 3700 * 1_000_000))
        refused(.expired, "expired", try Self.alice.jwt(claims))
        claims = Self.alice.assertionClaims(now: Timestamp(microseconds: now.microseconds + 600 * 1_000_000))
        refused(.notYetValid, "issued in the future", try Self.alice.jwt(claims))
        claims = good
        claims["sub"] = .string("someone@example.com")
        refused(.invalidSubject, "delegation", try Self.alice.jwt(claims))
        claims = good
        claims["scope"] = .string("https://www.googleapis.com/auth/bigquery")
        refused(.invalidScope, "no storage scope", try Self.alice.jwt(claims))
        claims = good
        claims["scope"] = nil
        refused(.invalidScope, "no scope", try Self.alice.jwt(claims))
        claims = good
        claims["target_audience"] = .string("https://service.example")
        refused(.invalidClaims, "an ID token request", try Self.alice.jwt(claims))
        refused(.unsupportedAlgorithm, "HS256", Fixtures.signHS256(claims: good))
        refused(.malformedToken, "not a JWT", "abc")
    }

    // MARK: Access tokens

    @Test("access tokens expire after an hour, die with the process's secret, and outlive neither account nor key")
    func accessTokens() throws {
        let grant = try Self.grant()
        let token = try grant.exchange(
            assertion: try Self.alice.jwt(Self.alice.assertionClaims(now: Self.now)), audiences: Self.audiences,
            at: Self.now
        ).accessToken
        let authority = ServiceAccountAuthority(accounts: grant.accounts, tokens: grant.tokens)
        let later = { (s: Int64) in Timestamp(microseconds: Self.now.microseconds + s * 1_000_000) }
        _ = try authority.caller(accessToken: token, at: later(3599))
        expectRefusal(.expired, "an hour later") { try authority.caller(accessToken: token, at: later(3600)) }
        let restarted = ServiceAccountAuthority(accounts: grant.accounts, tokens: AccessTokens())
        expectRefusal(.badSignature, "another process") { try restarted.caller(accessToken: token, at: Self.now) }
        let tampered = String(token.dropLast()) + (token.hasSuffix("A") ? "B" : "A")
        expectRefusal(.badSignature, "tampered") { try authority.caller(accessToken: tampered, at: Self.now) }
        let rotated = try TestServiceAccount(email: Self.alice.email, keyID: "rotated-key")
        let withoutKey = ServiceAccountAuthority(
            accounts: try ServiceAccounts([rotated.account()]), tokens: grant.tokens)
        expectRefusal(.unknownKey, "key rotated") { try withoutKey.caller(accessToken: token, at: Self.now) }
        let empty = ServiceAccountAuthority(accounts: try ServiceAccounts([]), tokens: grant.tokens)
        expectRefusal(.unknownKey, "account removed") { try empty.caller(accessToken: token, at: Self.now) }
    }

    @Test("a JWT a registered account signs itself is its bearer token, as Rust's object_store sends it")
    func selfSignedJWT() throws {
        let authority = ServiceAccountAuthority(
            accounts: try ServiceAccounts([Self.alice.account()]), tokens: AccessTokens(secret: Fixtures.secret))
        let seconds = Self.now.microseconds / 1_000_000
        // object_store's claims: iss and sub the account, the cloud-platform scope, no aud.
        let objectStore: JSONObject = [
            "iss": .string(Self.alice.email), "sub": .string(Self.alice.email),
            "scope": .string("https://www.googleapis.com/auth/cloud-platform"), "iat": .number(seconds),
            "exp": .number(seconds + 3600),
        ]
        let caller = try #require(try authority.caller(selfSignedJWT: try Self.alice.jwt(objectStore), at: Self.now))
        #expect(caller.email == Self.alice.email && caller.credential == .selfSignedJWT)
        var audience = objectStore
        audience["scope"] = nil
        audience["aud"] = .string("https://storage.googleapis.com/")
        #expect(try authority.caller(selfSignedJWT: try Self.alice.jwt(audience), at: Self.now) != nil)
        expectRefusal(.badSignature, "forged") {
            try authority.caller(selfSignedJWT: try Self.alice.jwt(objectStore, signer: Self.mallory), at: Self.now)
        }
        var other = audience
        other["aud"] = .string("https://bigquery.googleapis.com/")
        expectRefusal(.invalidScope, "another API") {
            try authority.caller(selfSignedJWT: try Self.alice.jwt(other), at: Self.now)
        }
        let later = Timestamp(microseconds: Self.now.microseconds + 3_700_000_000)
        expectRefusal(.expired, "expired") {
            try authority.caller(selfSignedJWT: try Self.alice.jwt(objectStore), at: later)
        }
        // Not a registered account's: not this verifier's to judge.
        var stranger = objectStore
        stranger["iss"] = .string(Self.mallory.email)
        #expect(try authority.caller(selfSignedJWT: try Self.mallory.jwt(stranger), at: Self.now) == nil)
        #expect(try authority.caller(selfSignedJWT: "not a jwt", at: Self.now) == nil)
    }

    @Test("the credential verifier takes its access tokens and passes every other credential on unchanged")
    func credentialVerifier() throws {
        let grant = try Self.grant()
        let token = try grant.exchange(
            assertion: try Self.alice.jwt(Self.alice.assertionClaims(now: Self.now)), audiences: Self.audiences,
            at: Self.now
        ).accessToken
        let verifier = ServiceAccountCredentials(
            ServiceAccountAuthority(accounts: grant.accounts, tokens: grant.tokens), next: Fixtures.fullVerifier())
        let principal = try #require(try verifier.authenticate(authorizationHeader: "Bearer \(token)", at: Self.now))
        #expect(principal.serviceAccount?.email == Self.alice.email)
        #expect(principal.verified && !principal.isAdmin && principal.uid == nil)
        let admin = try verifier.authenticate(authorizationHeader: "Bearer \(Fixtures.adminKey)", at: Self.now)
        #expect(admin?.isAdmin == true)
        #expect(try verifier.authenticate(authorizationHeader: nil, at: Self.now) == nil)
        #expect(throws: StorageError.self) {
            try verifier.authenticate(authorizationHeader: "Bearer silo1.forged.token", at: Self.now)
        }
    }
}
