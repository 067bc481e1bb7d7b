import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// CORS on a live server: the storage APIs answer any origin as the Firebase emulator does (the origin reflected,
/// the upload headers exposed), with `Access-Control-Allow-Credentials` only for a Cloud Workstations preview (the one
/// place a browser sends a credential by itself: its proxy's cookie); the console's paths answer no other origin.
@Suite struct CORSTests {
    static let adminKey = "cors-tests-admin-key"
    static let origin = "https://app.example"
    let server: TestServer
    let client: HTTPTestClient
    var admin: HTTPHeaders { ["Authorization": "Bearer \(Self.adminKey)"] }

    init() throws {
        var verifier = TokenVerifier.Configuration()
        verifier.adminKeys = try AdminKeys(keys: [Self.adminKey])
        server = try TestServer(policy: VectorPolicy(), credentials: TokenVerifier(verifier))
        client = server.client()
        let created = try client.send(
            method: "POST", target: "/storage/v1/b?project=p", headers: admin, body: bytes(#"{"name":"\#(bucket)"}"#))
        #expect(created.status == 200)
        var upload = admin
        upload.set("Content-Type", "text/plain")
        #expect(try client.mediaUpload("public/a.txt", bytes("hello"), headers: upload).status == 200)
    }

    func get(_ target: String, method: String = "GET", headers: HTTPHeaders) throws -> TestResponse {
        try client.send(method: method, target: target, headers: headers)
    }

    static func expectNoCORS(_ response: TestResponse, _ what: String) {
        let fields = response.headers.map(\.name).filter { $0.lowercased().hasPrefix("access-control-") }
        #expect(fields.isEmpty, "\(what): \(fields)")
    }

    @Test("the storage APIs reflect any origin, expose the upload headers, and allow no credentials")
    func storageRoutes() throws {
        var headers = admin
        headers.set("Origin", Self.origin)
        for target in [
            objectPath("public/a.txt"), objectPath("public/a.txt") + "?alt=media", "/storage/v1/b/\(bucket)/o",
            "/storage/v1/b/\(bucket)/o/public%2Fa.txt?alt=media", "/\(bucket)/public/a.txt", "/storage/v1/b/nothing/o",
        ] {
            let response = try get(target, headers: headers)
            #expect(response.headers["Access-Control-Allow-Origin"] == Self.origin, "\(target)")
            #expect(response.headers["Access-Control-Allow-Credentials"] == nil, "\(target)")
            #expect(response.headers.values("Vary").contains { $0.contains("Origin") }, "\(target)")
            #expect(response.headers["Access-Control-Expose-Headers"]?.contains("X-Goog-Upload-URL") == true)
        }
        // The JS SDK's resumable start, preflighted as a browser sends it.
        let preflight = try get(
            bucketPath() + "?name=public%2Fb.txt", method: "OPTIONS",
            headers: [
                "Origin": Self.origin, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers":
                    "authorization,content-type,x-goog-upload-command,x-goog-upload-protocol",
            ])
        #expect(preflight.status == 204)
        #expect(preflight.headers["Access-Control-Allow-Origin"] == Self.origin)
        #expect(preflight.headers["Access-Control-Allow-Methods"]?.contains("POST") == true)
        #expect(
            preflight.headers["Access-Control-Allow-Headers"]
                == "authorization,content-type,x-goog-upload-command,x-goog-upload-protocol")
        #expect(preflight.headers["Access-Control-Allow-Credentials"] == nil)
    }

    @Test("a Cloud Workstations preview, where the JS SDK sends the workstation's cookie, is answered with credentials")
    func cloudWorkstations() throws {
        let preview = "https://5000-my-workstation.cluster-abc.cloudworkstations.dev"
        for origin in [preview, preview + ":443"] {
            var headers = admin
            headers.set("Origin", origin)
            let read = try get(objectPath("public/a.txt"), headers: headers)
            #expect(read.headers["Access-Control-Allow-Origin"] == origin)
            #expect(read.headers["Access-Control-Allow-Credentials"] == "true")
            let preflight = try get(
                bucketPath() + "?name=public%2Fc.txt", method: "OPTIONS",
                headers: ["Origin": origin, "Access-Control-Request-Method": "POST"])
            #expect(preflight.headers["Access-Control-Allow-Credentials"] == "true")
        }
        // Look-alikes get no credentials; nor does the console, from any origin.
        for origin in [
            "http://5000-x.cloudworkstations.dev", "https://cloudworkstations.dev.evil.example",
            "https://evil.example/.cloudworkstations.dev",
        ] {
            var headers = admin
            headers.set("Origin", origin)
            #expect(
                try get(objectPath("public/a.txt"), headers: headers).headers["Access-Control-Allow-Credentials"] == nil
            )
        }
        Self.expectNoCORS(try get("/console/api/session", headers: ["Origin": preview]), "console API")
    }

    @Test("the console's API and files answer no other origin, and its API refuses a cross-origin browser request")
    func consoleRoutes() throws {
        for target in ["/console/api/session", "/console/api/rules", "/console/", "/console/app.js"] {
            var headers = admin
            headers.set("Origin", Self.origin)
            Self.expectNoCORS(try get(target, headers: headers), target)
            let preflight = try get(
                target, method: "OPTIONS",
                headers: [
                    "Origin": Self.origin, "Access-Control-Request-Method": "GET",
                    "Access-Control-Request-Headers": "authorization",
                ])
            #expect(preflight.status == 403, "\(target)")
            Self.expectNoCORS(preflight, "OPTIONS \(target)")
        }
        // Fetch metadata that a page cannot forge: only the console's own page (or the address bar) is answered.
        for (site, status) in [
            ("cross-site", 403), ("same-site", 403), ("same-origin", 200), ("none", 200),
        ] {
            var headers = admin
            headers.set("Sec-Fetch-Site", site)
            let response = try get("/console/api/session", headers: headers)
            #expect(response.status == status, "Sec-Fetch-Site: \(site)")
            var explain = headers
            explain.set("Content-Type", "application/json")
            let simulated = try client.send(
                method: "POST", target: "/console/api/rules/explain", headers: explain,
                body: bytes(#"{"operation":"get","bucket":"\#(bucket)","path":"public/a.txt"}"#))
            #expect(simulated.status == status, "explain, Sec-Fetch-Site: \(site): \(simulated.text)")
        }
        // A client that sends no fetch metadata (curl, a script) is no browser page: answered as before.
        #expect(try get("/console/api/session", headers: admin).status == 200)
    }
}
