import SiloAuth
import SiloCore
import SiloHTTP
import SiloRules
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// `POST /console/api/rules/explain` and `GET /console/api/rules` on a live secured server: admin only, the
/// decision and trace of the rules in force (through the executable's swappable wrapper) or of a draft, the stored
/// object as `resource`, and clean 400s for bad input.
@Suite struct ExplainEndpointTests {
    static let key = "explain-test-admin-key-0123456789"
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/{file} {
              allow read: if request.auth != null && request.auth.uid == uid;
              allow write: if request.auth.token.editor == true && request.resource.size < 1000;
            }
            match /tagged/{file} {
              allow get: if resource.metadata.visibility == 'public';
            }
          }
        }
        """

    static func server() throws -> TestServer {
        var verifier = TokenVerifier.Configuration()
        verifier.adminKeys = try AdminKeys(keys: [key])
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let program = try RulesProgram.compile(source: rules, fileName: "storage.rules")
        return try TestServer(
            backend: .memory, configuration: configuration,
            policy: SwappableAccessPolicy(RulesAccessPolicy(program: program)), credentials: TokenVerifier(verifier))
    }

    static let admin: HTTPHeaders = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]

    static func explain(_ client: HTTPTestClient, _ body: String, headers: HTTPHeaders = admin) throws -> TestResponse {
        try client.send(
            method: "POST", target: "/console/api/rules/explain", headers: headers, body: Array(body.utf8))
    }

    @Test func aDeniedReadNamesTheAllowThatFailed() throws {
        let server = try Self.server()
        let response = try Self.explain(
            server.client(), #"{"operation":"get","bucket":"b","path":"users/u1/a.png","auth":{"uid":"u2"}}"#)
        #expect(response.status == 200)
        #expect(response.headers["Cache-Control"] == "no-store")
        let body = try response.json()
        #expect(body["allowed"] == .bool(false))
        #expect(body["rules"] == .string("current"))
        let steps = try #require(body["steps"]?.arrayValue)
        let index = try #require(body["decidingStep"]?.int64Value)
        let deciding = try #require(steps[Int(index)].objectValue)
        #expect(deciding["kind"] == .string("allow"))
        #expect(deciding["outcome"] == .string("denied"))
        #expect(deciding["line"] == .number(5))
        #expect(
            deciding["statement"] == .string("allow read: if request.auth != null && request.auth.uid == uid;"))
        #expect(steps.first?.objectValue?["statement"] == .string("match /b/{bucket}/o"))
    }

    @Test func claimsAndProposedSizeReachTheRules() throws {
        let server = try Self.server()
        let client = server.client()
        let small = try Self.explain(
            client,
            #"{"operation":"create","bucket":"b","path":"users/u1/n.txt","auth":{"uid":"u1","token":{"editor":true}},"size":10}"#
        ).json()
        #expect(small["allowed"] == .bool(true))
        let big = try Self.explain(
            client,
            #"{"operation":"create","bucket":"b","path":"users/u1/n.txt","auth":{"uid":"u1","token":{"editor":true}},"size":5000}"#
        ).json()
        #expect(big["allowed"] == .bool(false))
    }

    @Test func theStoredObjectIsTheResource() throws {
        let server = try Self.server()
        let client = server.client()
        let bucket = try client.send(
            method: "POST", target: "/storage/v1/b", headers: Self.admin, body: Array(#"{"name":"b"}"#.utf8))
        #expect(bucket.status == 200, "\(bucket.text)")
        let created = try client.send(
            method: "POST", target: "/upload/storage/v1/b/b/o?uploadType=media&name=tagged/x.txt",
            headers: ["Authorization": "Bearer \(Self.key)", "Content-Type": "text/plain"], body: Array("hi".utf8))
        #expect(created.status == 200, "\(created.text)")
        let before = try Self.explain(client, #"{"operation":"get","bucket":"b","path":"tagged/x.txt"}"#).json()
        #expect(before["allowed"] == .bool(false))
        #expect(before["resourceExists"] == .bool(true))
        let patched = try client.send(
            method: "PATCH", target: "/storage/v1/b/b/o/tagged%2Fx.txt", headers: Self.admin,
            body: Array(#"{"metadata":{"visibility":"public"}}"#.utf8))
        #expect(patched.status == 200, "\(patched.text)")
        let after = try Self.explain(client, #"{"operation":"get","bucket":"b","path":"tagged/x.txt"}"#).json()
        #expect(after["allowed"] == .bool(true))
    }

    @Test func aDraftIsSimulatedInsteadOfTheRulesInForce() throws {
        let server = try Self.server()
        let client = server.client()
        let draft =
            "rules_version = '2';\\nservice firebase.storage {\\n  match /b/{bucket}/o/{all=**} {\\n    allow read;\\n  }\\n}\\n"
        let body = try Self.explain(
            client, #"{"operation":"get","bucket":"b","path":"users/u1/a.png","rules":"\#(draft)"}"#
        ).json()
        #expect(body["allowed"] == .bool(true))
        #expect(body["rules"] == .string("draft"))
        let broken = try Self.explain(
            client, #"{"operation":"get","bucket":"b","path":"x","rules":"service firebase.storage {"}"#)
        #expect(broken.status == 400)
        #expect(broken.text.contains("draft.rules:1:"))
    }

    @Test func theRulesInForceAreReadable() throws {
        let server = try Self.server()
        let body = try server.client().get("/console/api/rules", headers: Self.admin).json()
        #expect(body["loaded"] == .bool(true))
        #expect(body["source"] == .string(Self.rules))
        #expect(body["version"] == .number(2))
    }

    @Test(arguments: [
        #"{"operation":"peek","bucket":"b","path":"x"}"#,
        #"{"operation":"get","bucket":"B A D","path":"x"}"#,
        #"{"operation":"get","bucket":"b"}"#,
        #"{"operation":"get","bucket":"b","path":"x","auth":{"uid":""}}"#,
        #"{"operation":"get","bucket":"b","path":"x","auth":{"uid":"u","token":[1]}}"#,
        #"{"operation":"create","bucket":"b","path":"x","size":-1}"#,
        #"{"operation":"create","bucket":"b","path":"x","metadata":{"k":1}}"#,
        #"[1,2]"#,
        #"not json"#,
    ])
    func badInputIs400(body: String) throws {
        let server = try Self.server()
        let response = try Self.explain(server.client(), body)
        #expect(response.status == 400, "\(response.text)")
    }

    @Test func onlyTheAdminMayAsk() throws {
        let server = try Self.server()
        let client = server.client()
        let body = #"{"operation":"get","bucket":"b","path":"x"}"#
        #expect(try Self.explain(client, body, headers: ["Content-Type": "application/json"]).status == 403)
        #expect(try client.get("/console/api/rules").status == 403)
        #expect(try client.get("/console/api/rules/explain", headers: Self.admin).status == 405)
    }
}
