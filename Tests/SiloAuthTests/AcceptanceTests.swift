import SiloAuth
import SiloCore
import SiloWire
import Testing

/// Valid credentials of every kind produce the right principal.
@Suite struct AcceptanceTests {
    @Test(arguments: ["jwks", "x509"])
    func firebaseIDTokenFromEitherKeyFileFormat(format: String) throws {
        let verifier = Fixtures.firebaseVerifier(json: format == "jwks" ? Fixtures.jwks() : Fixtures.x509())
        let token = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        let principal = try #require(
            try verifier.principal(authorizationHeader: "Firebase \(token)", at: Fixtures.now))
        #expect(principal.uid == "alice-uid")
        #expect(principal.verified)
        #expect(!principal.isAdmin)
        #expect(principal.scheme == "Firebase")
        #expect(principal.credential == token)
        let claims = Fixtures.claims(of: principal)
        #expect(claims == Fixtures.firebaseClaims())
        #expect(claims["email"]?.stringValue == "alice@example.com")
        #expect(claims["email_verified"] == .bool(true))
        #expect(claims["firebase"]?.objectValue?["sign_in_provider"]?.stringValue == "password")
        #expect(claims["admin"] == .bool(true))
    }

    @Test func uidIsSubNotUserID() throws {
        // Firebase's semantic: `sub` is the uid. `user_id` normally repeats it; if they differ, `sub` wins.
        var claims = Fixtures.firebaseClaims(uid: "real-uid")
        claims["user_id"] = .string("claimed-uid")
        let token = Fixtures.signRS256(claims: claims)
        #expect(try Fixtures.firebaseVerifier().verify(token: token, at: Fixtures.now).uid == "real-uid")
    }

    @Test func rotatedKeysAreFoundByKid() throws {
        let verifier = Fixtures.firebaseVerifier(
            json: Fixtures.jwks([(Fixtures.kid, Fixtures.googleKey), (Fixtures.rotatedKid, Fixtures.rotatedKey)]))
        let token = Fixtures.signRS256(
            header: Fixtures.rs256Header(kid: Fixtures.rotatedKid), claims: Fixtures.firebaseClaims(),
            key: Fixtures.rotatedKey)
        #expect(try verifier.verify(token: token, at: Fixtures.now).verified)
    }

    @Test(arguments: [
        "Firebase", "Bearer", "firebase", "BEARER", "bEaReR", "Bearer  ", "  Firebase\t",
    ])
    func schemesAreCaseInsensitiveAndWhitespaceTolerant(scheme: String) throws {
        let token = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        let principal = try Fixtures.firebaseVerifier().principal(
            authorizationHeader: "\(scheme) \(token) ", at: Fixtures.now)
        #expect(principal?.uid == "alice-uid")
        #expect(principal?.credential == token)
        #expect(principal?.scheme == (scheme.lowercased().contains("bearer") ? "Bearer" : "Firebase"))
    }

    /// Found by fuzz/jwt: the header was split on space Characters, and a space followed by a combining mark is one
    /// Character that is not a space, so the scheme took in the credential ("Bearer \u{301}x" was an unknown scheme)
    /// or the credential kept its leading space.
    @Test func schemeAndCredentialAreSplitOnSpaceBytes() throws {
        do {
            _ = try Fixtures.fullVerifier().principal(authorizationHeader: "Bearer \u{301}x", at: Fixtures.now)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .malformedToken)
        }
        let token = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        let principal = try Fixtures.firebaseVerifier().principal(
            authorizationHeader: "Firebase \t\(token)\t ", at: Fixtures.now)
        #expect(principal?.credential == token)
    }

    @Test(arguments: [nil, "", "   ", "\t"] as [String?])
    func missingHeaderIsAnonymous(header: String?) throws {
        #expect(try Fixtures.fullVerifier().principal(authorizationHeader: header, at: Fixtures.now) == nil)
    }

    /// Rust's object_store (polars, obstore) sends `Authorization: Bearer ` when it has no credentials: anonymous,
    /// outside emulator mode too.
    @Test(arguments: ["Bearer", "Bearer ", "bearer \t ", "BEARER"])
    func bearerWithoutTokenIsAnonymous(header: String) throws {
        #expect(try Fixtures.fullVerifier().principal(authorizationHeader: header, at: Fixtures.now) == nil)
    }

    @Test func expiryWithinTheClockSkewIsAccepted() throws {
        var claims = Fixtures.firebaseClaims()
        claims["exp"] = .number(Fixtures.nowSeconds - 59)
        claims["iat"] = .number(Fixtures.nowSeconds + 59)
        claims["auth_time"] = .number(Fixtures.nowSeconds + 59)
        let token = Fixtures.signRS256(claims: claims)
        #expect(try Fixtures.firebaseVerifier().verify(token: token, at: Fixtures.now).uid == "alice-uid")
    }

    @Test func checkingAtAnEarlierTimeAcceptsATokenExpiredSince() throws {
        // What a resumable upload's commit does: check the token as of the session's start.
        let token = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        let later = Timestamp(microseconds: (Fixtures.nowSeconds + 7200) * 1_000_000)
        #expect(throws: AuthError.self) { try Fixtures.firebaseVerifier().verify(token: token, at: later) }
        #expect(
            try Fixtures.firebaseVerifier().principal(authorizationHeader: "Bearer \(token)", at: Fixtures.now) != nil)
    }

    @Test func selfIssuedTokenRoundTrip() throws {
        let issuer = Fixtures.selfIssued()
        let token = try issuer.mint(
            uid: "carol", claimsJSON: #"{"role":"editor","groups":["a","b"]}"#, lifetimeSeconds: 600, now: Fixtures.now)
        var configuration = TokenVerifier.Configuration()
        configuration.selfIssued = issuer
        let principal = try #require(
            try TokenVerifier(configuration).principal(authorizationHeader: "Bearer \(token)", at: Fixtures.now))
        #expect(principal.uid == "carol")
        #expect(principal.verified)
        let claims = Fixtures.claims(of: principal)
        #expect(claims["iss"]?.stringValue == SelfIssuedTokens.issuer)
        #expect(claims["aud"]?.stringValue == Fixtures.project)
        #expect(claims["user_id"]?.stringValue == "carol")
        #expect(claims["exp"]?.int64Value == Fixtures.nowSeconds + 600)
        #expect(claims["iat"]?.int64Value == Fixtures.nowSeconds)
        #expect(claims["auth_time"]?.int64Value == Fixtures.nowSeconds)
        #expect(claims["firebase"]?.objectValue?["sign_in_provider"]?.stringValue == "custom")
        #expect(claims["role"]?.stringValue == "editor")
        #expect(claims["groups"] == .array([.string("a"), .string("b")]))
    }

    @Test func selfIssuedTokenHasTheDocumentedHeader() throws {
        let token = try Fixtures.selfIssued().mint(uid: "u", now: Fixtures.now)
        let header = token.split(separator: ".")[0]
        #expect(
            try JSONValue.parse(Base64.decode(header)!) == .object(["alg": .string("HS256"), "typ": .string("JWT")]))
    }

    @Test func firebaseAndSelfIssuedTokensWorkSideBySide() throws {
        let verifier = Fixtures.fullVerifier()
        let firebase = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        let own = try Fixtures.selfIssued().mint(uid: "dave", now: Fixtures.now)
        #expect(try verifier.verify(token: firebase, at: Fixtures.now).uid == "alice-uid")
        #expect(try verifier.verify(token: own, at: Fixtures.now).uid == "dave")
    }

    @Test func mintRefusesBadInput() {
        let issuer = Fixtures.selfIssued()
        func code(_ body: () throws(AuthError) -> String) -> AuthError.Code? {
            do {
                _ = try body()
                return nil
            } catch { return error.code }
        }
        #expect(code { () throws(AuthError) in try issuer.mint(uid: "") } == .invalidSubject)
        #expect(
            code { () throws(AuthError) in try issuer.mint(uid: String(repeating: "x", count: 129)) } == .invalidSubject
        )
        #expect(
            code { () throws(AuthError) in try issuer.mint(uid: "u", claimsJSON: #"{"sub":"root"}"#) } == .invalidClaims
        )
        #expect(
            code { () throws(AuthError) in try issuer.mint(uid: "u", claimsJSON: #"{"firebase":{}}"#) }
                == .invalidClaims)
        #expect(code { () throws(AuthError) in try issuer.mint(uid: "u", claimsJSON: "[1]") } == .invalidClaims)
        #expect(code { () throws(AuthError) in try issuer.mint(uid: "u", claimsJSON: "{") } == .invalidClaims)
        let big = #"{"blob":""# + String(repeating: "x", count: 1000) + #""}"#
        #expect(code { () throws(AuthError) in try issuer.mint(uid: "u", claimsJSON: big) } == .invalidClaims)
        #expect(code { () throws(AuthError) in try issuer.mint(uid: "u", lifetimeSeconds: 0) } == .invalidClaims)
        #expect(code { () throws(AuthError) in try issuer.mint(uid: String(repeating: "x", count: 128)) } == nil)
    }
}
