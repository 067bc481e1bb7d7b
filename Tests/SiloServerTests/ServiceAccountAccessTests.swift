import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloTesting
import SiloWire
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// Service accounts get access tokens from Silo's token endpoint, and bucket IAM bindings and ACLs
/// decide what they may do on the JSON and XML APIs — nothing without a binding. Admin keys work as before.
@Suite struct ServiceAccountAccessTests {
    let s: SecuredServer

    init() throws { s = try SecuredServer() }

    var reader: TestServiceAccount { SecuredServer.reader }
    var writer: TestServiceAccount { SecuredServer.writer }

    @Test("the token endpoint answers the JWT-bearer grant as RFC 6749 says, at /token and /oauth2/v4/token")
    func tokenEndpoint() throws {
        let assertion = try reader.jwt(reader.assertionClaims(now: .now()))
        let form = "grant_type=\(PercentCoding.encodeComponent(TokenGrant.grantType))&assertion=\(assertion)"
        let type: HTTPHeaders = ["Content-Type": "application/x-www-form-urlencoded"]
        for path in ["/token", "/oauth2/v4/token"] {
            let response = try s.send("POST", path, form, headers: type)
            #expect(response.status == 200)
            let json = try response.json()
            #expect(json["token_type"]?.stringValue == "Bearer")
            #expect(json["expires_in"]?.int64Value == 3600)
            #expect(json["access_token"]?.stringValue?.hasPrefix("silo1.") == true)
            #expect(response.headers["Cache-Control"] == "no-store")
        }
        let forged = try reader.jwt(reader.assertionClaims(now: .now()), signer: SecuredServer.stranger)
        let refused = try s.send(
            "POST", "/token", "grant_type=\(PercentCoding.encodeComponent(TokenGrant.grantType))&assertion=\(forged)",
            headers: type)
        #expect(refused.status == 400)
        #expect(try refused.string("error") == "invalid_grant")
        let password = try s.send("POST", "/token", "grant_type=password&username=a&password=b", headers: type)
        #expect(try password.string("error") == "unsupported_grant_type")
        #expect(try s.send("POST", "/token", form, headers: ["Content-Type": "application/json"]).status == 400)
        #expect(try s.send("GET", "/token").status == 400)
    }

    @Test("the token paths are the token endpoint; a bucket named token is reachable below them")
    func tokenRoutes() throws {
        #expect(try routed("/token") == .gcs(.oauthToken))
        #expect(try routed("/oauth2/v4/token") == .gcs(.oauthToken))
        #expect(try routed("/token/a.txt") == .gcs(.xmlObject(try BucketName("token"), try ObjectName("a.txt"))))
        #expect(try routed("/oauth2/v4") == .gcs(.xmlObject(try BucketName("oauth2"), try ObjectName("v4"))))
    }

    @Test("a service account with no binding is refused (403), as on GCS; anonymous callers still get 401")
    func noBinding() throws {
        try s.put("a.txt", "a")
        let token = try s.token(reader)
        let list = try s.send("GET", s.objects, headers: s.bearer(token))
        #expect(list.status == 403)
        #expect(list.text.contains("storage.objects.list"))
        #expect(try s.send("GET", "\(s.objects)/a.txt?alt=media", headers: s.bearer(token)).status == 403)
        let xml = try s.send("GET", "/\(s.bucketName)/a.txt", headers: s.bearer(token))
        #expect(xml.status == 403)
        #expect(xml.text.contains("<Code>AccessDenied</Code>"))
        #expect(try s.send("GET", s.objects).status == 401)
        #expect(try s.send("GET", s.objects, headers: s.admin).status == 200, "the admin key works as before")
    }

    @Test("objectViewer reads and lists, and nothing more; testIamPermissions says exactly that")
    func viewer() throws {
        try s.put("a.txt", "bytes of a")
        try s.bind([("roles/storage.objectViewer", ["serviceAccount:\(reader.email)"])])
        let token = try s.token(reader)
        #expect(try s.send("GET", s.objects, headers: s.bearer(token)).status == 200)
        let media = try s.send("GET", "\(s.objects)/a.txt?alt=media", headers: s.bearer(token))
        #expect(media.status == 200 && media.text == "bytes of a")
        let upload = try s.send(
            "POST", "/upload/storage/v1/b/\(s.bucketName)/o?uploadType=media&name=b.txt", "b", headers: s.bearer(token))
        #expect(upload.status == 403)
        #expect(try s.send("DELETE", "\(s.objects)/a.txt", headers: s.bearer(token)).status == 403)
        #expect(try s.send("GET", "/storage/v1/b/\(s.bucketName)/iam", headers: s.bearer(token)).status == 403)
        let asked = [
            "storage.objects.get", "storage.objects.list", "storage.objects.create", "storage.buckets.setIamPolicy",
        ]
        let test = try s.send(
            "GET",
            "/storage/v1/b/\(s.bucketName)/iam/testPermissions?"
                + asked.map { "permissions=\($0)" }.joined(separator: "&"),
            headers: s.bearer(token))
        #expect(test.status == 200)
        let held = try test.json()["permissions"]?.arrayValue?.compactMap(\.stringValue)
        #expect(held == ["storage.objects.get", "storage.objects.list"])
        // Another account, not bound, holds none of them.
        let other = try s.send(
            "GET", "/storage/v1/b/\(s.bucketName)/iam/testPermissions?permissions=storage.objects.get",
            headers: s.bearer(try s.token(writer)))
        #expect(try other.json()["permissions"] == nil)
    }

    @Test("objectCreator creates but may not replace or read others' objects; objectAdmin may; the scope caps a token")
    func creatorAndAdmin() throws {
        try s.put("existing.txt", "old")
        try s.bind([
            ("roles/storage.objectCreator", ["serviceAccount:\(writer.email)"]),
            ("roles/storage.objectAdmin", ["serviceAccount:\(reader.email)"]),
        ])
        let creator = try s.token(writer)
        func upload(_ name: String, _ headers: HTTPHeaders) throws -> Int {
            try s.send(
                "POST", "/upload/storage/v1/b/\(s.bucketName)/o?uploadType=media&name=\(name)", name, headers: headers
            )
            .status
        }
        #expect(try upload("new.txt", s.bearer(creator)) == 200)
        #expect(try upload("existing.txt", s.bearer(creator)) == 403, "replacing needs storage.objects.delete")
        #expect(try s.send("GET", "\(s.objects)/existing.txt", headers: s.bearer(creator)).status == 403)
        // With uniform access off the creator owns what it created (the object ACL names it OWNER), as in GCS.
        #expect(try s.send("GET", "\(s.objects)/new.txt", headers: s.bearer(creator)).status == 200)
        let admin = try s.token(reader)
        #expect(try upload("existing.txt", s.bearer(admin)) == 200)
        #expect(try s.send("DELETE", "\(s.objects)/new.txt", headers: s.bearer(admin)).status == 204)
        // objectAdmin has no bucket permissions.
        #expect(try s.send("GET", "/storage/v1/b/\(s.bucketName)", headers: s.bearer(admin)).status == 403)
        let readOnly = try s.token(reader, scope: "https://www.googleapis.com/auth/devstorage.read_only")
        #expect(try upload("scoped.txt", s.bearer(readOnly)) == 403)
        #expect(try s.send("GET", "\(s.objects)/existing.txt", headers: s.bearer(readOnly)).status == 200)
    }

    @Test("with uniform access off, an object ACL naming the account opens that object only")
    func objectACL() throws {
        try s.put("shared.txt", "shared")
        try s.put("private.txt", "private")
        let grant = try s.send(
            "PATCH", "\(s.objects)/shared.txt", #"{"acl":[{"entity":"user-\#(reader.email)","role":"READER"}]}"#,
            headers: s.admin)
        #expect(grant.status == 200, "\(grant.text)")
        let token = try s.token(reader)
        #expect(try s.send("GET", "\(s.objects)/shared.txt?alt=media", headers: s.bearer(token)).text == "shared")
        #expect(try s.send("GET", "\(s.objects)/private.txt", headers: s.bearer(token)).status == 403)
        #expect(try s.send("GET", s.objects, headers: s.bearer(token)).status == 403)
        let ubla = try s.send(
            "PATCH", "/storage/v1/b/\(s.bucketName)",
            #"{"iamConfiguration":{"uniformBucketLevelAccess":{"enabled":true}}}"#, headers: s.admin)
        #expect(ubla.status == 200)
        #expect(try s.send("GET", "\(s.objects)/shared.txt", headers: s.bearer(token)).status == 403)
    }

    @Test("storage.admin may read and set the bucket's IAM policy; the token names the caller in denials")
    func storageAdmin() throws {
        try s.bind([("roles/storage.admin", ["serviceAccount:\(reader.email)"])])
        let token = try s.token(reader)
        #expect(try s.send("GET", "/storage/v1/b/\(s.bucketName)/iam", headers: s.bearer(token)).status == 200)
        #expect(try s.send("GET", "/storage/v1/b/\(s.bucketName)", headers: s.bearer(token)).status == 200)
        // Creating buckets is a project permission no bucket policy grants.
        let create = try s.send("POST", "/storage/v1/b", #"{"name":"another-bucket"}"#, headers: s.bearer(token))
        #expect(create.status == 403)
        let denied = try s.send("GET", s.objects, headers: s.bearer(try s.token(writer)))
        #expect(denied.text.contains(writer.email))
    }

    @Test("a self-signed JWT (object_store's) is the account's token: IAM decides, a forged one is 401")
    func selfSignedJWT() throws {
        try s.put("a.txt", "a")
        try s.bind([("roles/storage.objectViewer", ["serviceAccount:\(reader.email)"])])
        let seconds = Timestamp.now().microseconds / 1_000_000
        let claims: JSONObject = [
            "iss": .string(reader.email), "sub": .string(reader.email),
            "scope": .string("https://www.googleapis.com/auth/cloud-platform"), "iat": .number(seconds),
            "exp": .number(seconds + 3600),
        ]
        let jwt = try reader.jwt(claims)
        #expect(try s.send("GET", s.objects, headers: s.bearer(jwt)).status == 200)
        #expect(try s.send("GET", "/\(s.bucketName)/a.txt", headers: s.bearer(jwt)).text == "a")
        let upload = try s.send(
            "POST", "/upload/storage/v1/b/\(s.bucketName)/o?uploadType=media&name=b.txt", "b", headers: s.bearer(jwt))
        #expect(upload.status == 403)
        let forged = try reader.jwt(claims, signer: SecuredServer.stranger)
        #expect(try s.send("GET", s.objects, headers: s.bearer(forged)).status == 401)
    }

    @Test("an access token from an earlier run of the server is refused with 401, so clients fetch a new one")
    func restartedServer() throws {
        let token = try s.token(reader)
        let again = try SecuredServer()
        #expect(try again.send("GET", again.objects, headers: again.bearer(token)).status == 401)
    }
}
