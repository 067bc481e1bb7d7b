import SiloAuth
import SiloCore
import SiloHTTP
@_spi(Testing) import SiloHashing
import SiloRules
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// Every reference case of ``SpecCaseTests`` again, through the real HTTP API of a live server: the rules are compiled
/// from the same sources, each case's existing object is uploaded first (as the admin), and the case's operation is
/// sent with a real token for the case's identity — RS256 signed, HS256 signed, and unsigned in emulator mode.
@Suite struct SpecCaseHTTPTests {
    enum TokenKind: String, CaseIterable, Sendable { case rs256, hs256, emulator }

    /// The tables that run over HTTP, with their rules.
    static let tables: [(name: String, rules: String, cases: [Case])] = [
        ("R1", SpecRules.r1, SpecCaseTests.r1), ("R2", SpecRules.r2, SpecCaseTests.r2),
        ("R3a", SpecRules.r3a, SpecCaseTests.r3.filter { $0.0 == "a" }.map(\.1)),
        ("R3b", SpecRules.r3b, SpecCaseTests.r3.filter { $0.0 == "b" }.map(\.1)),
        ("R4", SpecRules.r4, SpecCaseTests.r4), ("R5", SpecRules.r5, SpecCaseTests.r5),
        ("R6", SpecRules.r6, SpecCaseTests.r6), ("R7", SpecRules.r7, SpecCaseTests.r7),
        ("R8", SpecRules.r8, SpecCaseTests.r8), ("R9", SpecRules.r9, SpecCaseTests.r9),
        ("R10", SpecRules.r10, SpecCaseTests.r10), ("R11", SpecRules.r11, SpecCaseTests.r11),
        ("R12", SpecRules.r12, SpecCaseTests.r12), ("R13", SpecRules.r13, SpecCaseTests.r13),
        ("R14", SpecRules.r14, SpecCaseTests.r14),
    ]

    static let adminKey = "http-spec-admin-key-0123456789"
    static let secret = "an HS256 secret of at least thirty-two bytes"
    static let project = "demo-rules"
    static let signingKey = try! RSAPrivateKey(bits: 2048)

    static func verifier(emulator: Bool) throws -> TokenVerifier {
        var configuration = TokenVerifier.Configuration()
        configuration.emulator = emulator
        configuration.adminKeys = try AdminKeys(keys: [adminKey])
        let (n, e) = try signingKey.publicComponents()
        let jwks =
            #"{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":"k1","n":"\#(Base64.encodeURLSafe(n))","e":"\#(Base64.encodeURLSafe(e))"}]}"#
        configuration.firebase = FirebaseIDTokens(projectID: project, keys: try KeySet(json: jwks))
        configuration.selfIssued = try SelfIssuedTokens(secret: Array(secret.utf8), audience: project)
        return TokenVerifier(configuration)
    }

    /// A token of `kind` carrying the principal's uid and claims.
    static func token(_ principal: Principal, _ kind: TokenKind) throws -> String {
        guard case .object(let fixtureClaims) = try JSONValue.parse(principal.claimsJSON) else { return "" }
        let uid = principal.uid ?? "anonymous"
        let now = Timestamp.now().microseconds / 1_000_000
        switch kind {
        case .hs256:
            var custom = JSONObject()
            for (k, v) in fixtureClaims.members where !SelfIssuedTokens.reservedClaims.contains(k) { custom[k] = v }
            return try SelfIssuedTokens(secret: Array(secret.utf8), audience: project).mint(uid: uid, claims: custom)
        case .rs256, .emulator:
            var claims: JSONObject = [
                "iss": .string("https://securetoken.google.com/\(project)"), "aud": .string(project),
                "iat": .number(now - 10), "auth_time": .number(now - 10), "exp": .number(now + 3600),
                "sub": .string(uid), "user_id": .string(uid),
            ]
            for (k, v) in fixtureClaims.members where claims[k] == nil { claims[k] = v }
            let header: JSONValue =
                kind == .rs256
                ? .object(["alg": .string("RS256"), "kid": .string("k1"), "typ": .string("JWT")])
                : .object(["alg": .string("none"), "type": .string("JWT")])
            let input =
                Base64.encodeURLSafe(header.serialized()) + "."
                + Base64.encodeURLSafe(JSONValue.object(claims).serialized())
            guard kind == .rs256 else { return input + "." }
            return input + "." + Base64.encodeURLSafe(try signingKey.signRS256(Array(input.utf8)))
        }
    }

    static var arguments: [(String, Int, TokenKind)] {
        tables.flatMap { table in table.cases.indices.flatMap { i in TokenKind.allCases.map { (table.name, i, $0) } } }
    }

    @Test(arguments: arguments)
    func caseOverHTTP(table: String, index: Int, kind: TokenKind) throws {
        let entry = Self.tables.first { $0.name == table }!
        let c = entry.cases[index]
        let program = try RulesProgram.compile(source: entry.rules, fileName: "\(table).rules")
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let server = try TestServer(
            backend: .memory, configuration: configuration, policy: RulesAccessPolicy(program: program),
            credentials: Self.verifier(emulator: kind == .emulator))
        let client = server.client()
        let request = c.request
        let bucket = request.bucket.rawValue
        let admin: HTTPHeaders = ["Authorization": "Bearer \(Self.adminKey)"]
        if let existing = request.resource {
            let up = try upload(
                client, bucket, existing.name.rawValue, existing.fields, size: existing.size, headers: admin)
            try #require(up.status == 200, "seeding \(existing.name): \(up.status) \(up.text)")
        }
        var headers = HTTPHeaders()
        if let principal = request.principal {
            headers.set("Authorization", "Firebase \(try Self.token(principal, kind))")
        }
        let object = "/v0/b/\(bucket)/o/" + PercentCoding.encodeComponent(request.path as String)
        let response: TestResponse
        switch request.operation {
        case .get: response = try client.send(method: "GET", target: object, headers: headers)
        case .list:
            let prefix = request.path.isEmpty ? "" : PercentCoding.encodeComponent(request.path + "/")
            response = try client.send(
                method: "GET", target: "/v0/b/\(bucket)/o?prefix=\(prefix)&delimiter=%2F", headers: headers)
        case .delete: response = try client.send(method: "DELETE", target: object, headers: headers)
        case .create:
            response = try upload(
                client, bucket, request.path, request.proposedFields ?? ObjectFields(),
                size: request.proposedSize ?? 0, headers: headers)
        case .update:
            var body = JSONObject()
            let fields = request.proposedFields ?? ObjectFields()
            body["contentType"] = fields.contentType.map { .string($0) } ?? .null
            var custom = JSONObject()
            for key in (request.resource?.fields.customMetadata.keys).map(Array.init) ?? []
            where fields.customMetadata[key] == nil {
                custom[key] = .null
            }
            for (k, v) in fields.customMetadata { custom[k] = .string(v) }
            body["metadata"] = .object(custom)
            headers.set("Content-Type", "application/json")
            response = try client.send(
                method: "PATCH", target: object, headers: headers, body: JSONValue.object(body).serialized())
        }
        let granted = response.status != 403 && response.status != 401
        #expect(
            granted == c.allowed,
            "\(c.id) [\(kind)] \(request.operation) \(request.path): HTTP \(response.status) \(response.text.prefix(200))"
        )
        if granted {
            #expect(
                response.status < 300 || response.status == 404,
                "\(c.id): \(response.status) \(response.text.prefix(200))")
        }
    }

    private func upload(
        _ client: HTTPTestClient, _ bucket: String, _ name: String, _ fields: ObjectFields, size: Int64,
        headers: HTTPHeaders
    ) throws -> TestResponse {
        var meta: JSONObject = ["name": .string(name)]
        if let type = fields.contentType { meta["contentType"] = .string(type) }
        if !fields.customMetadata.isEmpty {
            var custom = JSONObject()
            for (k, v) in fields.customMetadata { custom[k] = .string(v) }
            meta["metadata"] = .object(custom)
        }
        let boundary = "spec-boundary-1234"
        var body =
            Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8) + JSONValue.object(meta).serialized()
        body += Array(
            "\r\n--\(boundary)\r\nContent-Type: \(fields.contentType ?? "application/octet-stream")\r\n\r\n".utf8)
        body += [UInt8](repeating: 0x61, count: Int(size))
        body += Array("\r\n--\(boundary)--".utf8)
        var all = headers
        all.set("X-Goog-Upload-Protocol", "multipart")
        all.set("Content-Type", "multipart/related; boundary=\(boundary)")
        return try client.send(
            method: "POST", target: "/v0/b/\(bucket)/o?name=" + PercentCoding.encodeComponent(name), headers: all,
            body: body)
    }
}

/// Refused credentials are 401 over HTTP, in the v0 and the GCS error shapes; never 403 and never granted.
@Suite struct BadTokenHTTPTests {
    static func rs256(_ claims: JSONObject, kid: String = "k1", alg: String = "RS256") throws -> String {
        let header: JSONValue = .object(["alg": .string(alg), "kid": .string(kid), "typ": .string("JWT")])
        let input =
            Base64.encodeURLSafe(header.serialized()) + "."
            + Base64.encodeURLSafe(JSONValue.object(claims).serialized())
        return input + "." + Base64.encodeURLSafe(try SpecCaseHTTPTests.signingKey.signRS256(Array(input.utf8)))
    }

    static func claims(iss: String? = nil, aud: String? = nil, iat: Int64 = -10, exp: Int64 = 3600) -> JSONObject {
        let now = Timestamp.now().microseconds / 1_000_000
        return [
            "iss": .string(iss ?? "https://securetoken.google.com/\(SpecCaseHTTPTests.project)"),
            "aud": .string(aud ?? SpecCaseHTTPTests.project), "iat": .number(now + iat),
            "auth_time": .number(now + iat),
            "exp": .number(now + exp), "sub": .string("u1"),
        ]
    }

    @Test func refusedTokens() throws {
        let open = try RulesProgram.compile(
            source: "rules_version = '2';\nservice firebase.storage { match /b/{b}/o/{p=**} { allow read: if true; } }",
            fileName: "open.rules")
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let server = try TestServer(
            backend: .memory, configuration: configuration, policy: RulesAccessPolicy(program: open),
            credentials: SpecCaseHTTPTests.verifier(emulator: false))
        let client = server.client()
        let unsigned =
            Base64.encodeURLSafe(Array(#"{"alg":"none","type":"JWT"}"#.utf8)) + "."
            + Base64.encodeURLSafe(JSONValue.object(Self.claims()).serialized()) + "."
        let good = try Self.rs256(Self.claims())
        let tampered = String(good.dropLast(4)) + "AAAA"
        let hsWithRSKid = try SelfIssuedTokens(secret: Array(SpecCaseHTTPTests.secret.utf8), audience: "other").mint(
            uid: "u1")
        let tokens: [(String, String)] = [
            ("unsigned outside emulator mode", unsigned),
            ("expired", try Self.rs256(Self.claims(iat: -7200, exp: -3600))),
            ("issued in the future", try Self.rs256(Self.claims(iat: 3600, exp: 7200))),
            ("wrong audience", try Self.rs256(Self.claims(aud: "someone-else"))),
            ("wrong issuer", try Self.rs256(Self.claims(iss: "https://evil.example/demo-rules"))),
            ("bad signature", tampered), ("unknown kid", try Self.rs256(Self.claims(), kid: "nope")),
            ("HS256 for another audience", hsWithRSKid), ("owner outside emulator mode", "owner"),
            ("not a JWT", "a.b"),
        ]
        #expect(
            try client.send(method: "GET", target: "/v0/b/B/o/x", headers: ["Authorization": "Firebase \(good)"]).status
                == 404)
        for (what, token) in tokens {
            let v0 = try client.send(
                method: "GET", target: "/v0/b/B/o/x", headers: ["Authorization": "Firebase \(token)"])
            #expect(v0.status == 401, "\(what): \(v0.status) \(v0.text)")
            #expect(!v0.text.contains(token), "\(what): the token leaked into the error")
            let gcs = try client.send(
                method: "GET", target: "/storage/v1/b/B/o/x", headers: ["Authorization": "Bearer \(token)"])
            #expect(gcs.status == 401, "\(what) (GCS): \(gcs.status)")
        }
        // The GCS API needs admin credentials outside emulator mode (and the bucket must exist: GCS never makes one).
        _ = try client.send(
            method: "POST", target: "/storage/v1/b", headers: ["Authorization": "Bearer \(SpecCaseHTTPTests.adminKey)"],
            body: Array(#"{"name":"B"}"#.utf8))
        #expect(try client.send(method: "GET", target: "/storage/v1/b/B/o").status == 401)
        #expect(
            try client.send(method: "GET", target: "/storage/v1/b/B/o", headers: ["Authorization": "Bearer \(good)"])
                .status == 403)
        #expect(
            try client.send(
                method: "GET", target: "/storage/v1/b/B/o",
                headers: ["Authorization": "Bearer \(SpecCaseHTTPTests.adminKey)"]
            ).status == 200)
    }
}
