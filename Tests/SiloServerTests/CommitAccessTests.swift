import Foundation
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

/// Whether an upload replaces an existing object — and so needs `storage.objects.delete` (GCS: "the authenticated
/// user must also have storage.objects.delete if the new object overwrites an existing object") — is decided when the
/// object is committed, not only when the upload starts. A caller that may create but not delete
/// (`roles/storage.objectCreator`) starts an upload of a name nobody uses yet; the owner then creates that object;
/// the upload's commit must be refused and the owner's bytes stay. Every path that commits after a delay.
@Suite struct CommitAccessTests {
    let s: SecuredServer
    let name = "contested.txt"

    init() throws {
        s = try SecuredServer()
        try s.bind([("roles/storage.objectCreator", ["serviceAccount:\(SecuredServer.writer.email)"])])
    }

    var writer: TestServiceAccount { SecuredServer.writer }
    var xmlPath: String { "/\(s.bucketName)/\(name)" }

    /// The owner (admin) creates the object the upload is racing for.
    func ownerCreates(_ object: String? = nil) throws {
        #expect(try s.upload(object ?? name, "owner's bytes", headers: s.admin).status == 200)
    }

    /// Whether the owner's object holds what the owner wrote, afterwards.
    func survived(_ object: String? = nil) throws -> Bool { try s.bytes(object ?? name) == "owner's bytes" }

    @Test("JSON API resumable: the final PUT of a create-only caller's session does not replace what appeared")
    func jsonResumable() throws {
        let token = try s.token(writer)
        var headers = s.bearer(token)
        headers.set("Content-Type", "application/json")
        let started = try s.send(
            "POST", "/upload/storage/v1/b/\(s.bucketName)/o?uploadType=resumable&name=\(name)", "{}", headers: headers)
        #expect(started.status == 200, "\(started.text)")
        let location = try #require(started.headers["Location"])
        try ownerCreates()
        // The session URL is the credential: no Authorization, as clients send it.
        let final = try s.send(
            "PUT", String(location[try #require(location.range(of: "/upload/")).lowerBound...]), "intruder")
        #expect(final.status == 403, "\(final.text)")
        #expect(try survived())
        // The refusal is the session's answer from now on.
        let again = try s.send(
            "PUT", String(location[try #require(location.range(of: "/upload/")).lowerBound...]), "intruder")
        #expect(again.status == 403)
        // A session whose name is still free when it commits creates it.
        let fresh = try s.send(
            "POST", "/upload/storage/v1/b/\(s.bucketName)/o?uploadType=resumable&name=fresh.txt", "{}",
            headers: headers)
        let freshLocation = try #require(fresh.headers["Location"])
        let created = try s.send(
            "PUT", String(freshLocation[try #require(freshLocation.range(of: "/upload/")).lowerBound...]), "new")
        #expect(created.status == 200, "\(created.text)")
        #expect(try s.bytes("fresh.txt") == "new")
    }

    @Test("XML API resumable: the session's last PUT is decided against the object as it is then")
    func xmlResumable() throws {
        var headers = s.bearer(try s.token(writer))
        headers.set("x-goog-resumable", "start")
        let started = try s.send("POST", xmlPath, headers: headers)
        #expect(started.status == 201, "\(started.text)")
        let location = try #require(started.headers["Location"])
        try ownerCreates()
        let final = try s.send(
            "PUT", String(location[try #require(location.range(of: xmlPath)).lowerBound...]), "intruder")
        #expect(final.status == 403, "\(final.text)")
        #expect(final.text.contains("AccessDenied"))
        #expect(try survived())
    }

    @Test("a signed URL that starts a resumable upload: the session commits as its signer, decided at commit")
    func signedURLResumable() throws {
        let start = try writer.signedURL(
            method: "POST", path: xmlPath, host: "storage.googleapis.com", headers: [("x-goog-resumable", "start")],
            date: .now())
        let started = try s.send("POST", start, headers: ["x-goog-resumable": "start"])
        #expect(started.status == 201, "\(started.text)")
        let location = try #require(started.headers["Location"])
        try ownerCreates()
        let final = try s.send(
            "PUT", String(location[try #require(location.range(of: xmlPath)).lowerBound...]), "intruder")
        #expect(final.status == 403, "\(final.text)")
        #expect(try survived())
    }

    @Test("XML multipart: completion is decided against the object as it is when the parts are composed")
    func xmlMultipart() throws {
        let token = try s.token(writer)
        let initiated = try s.send("POST", xmlPath + "?uploads", headers: s.bearer(token))
        #expect(initiated.status == 200, "\(initiated.text)")
        let uploadID = try #require(XMLText.value("UploadId", in: Substring(initiated.text)))
        let part = try s.send(
            "PUT", xmlPath + "?partNumber=1&uploadId=\(uploadID)", "intruder", headers: s.bearer(token))
        #expect(part.status == 200, "\(part.text)")
        let etag = try #require(part.headers["ETag"])
        let completion =
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag)</ETag></Part>"
            + "</CompleteMultipartUpload>"
        // The name is free when the completion arrives; the owner creates it before the parts are composed.
        let completed = try s.raced(
            "POST", xmlPath + "?uploadId=\(uploadID)", Array(completion.utf8), headers: s.bearer(token)
        ) { try ownerCreates() }
        #expect(completed.status == 403, "\(completed.text)")
        #expect(try survived())
    }

    @Test("POST policy: the form's signer is decided against the object as it is when the file is stored")
    func postPolicy() async throws {
        // Off the cooperative pool: the race waits on the server, and a loaded run must not starve the wait.
        try await offThePool("post-policy race") {
            let refused = try racedForm(key: name)
            #expect(refused.status == 403, "\(refused.text)")
            #expect(refused.text.contains("storage.objects.delete"), "refused for replacing, not for anything else")
            #expect(try survived())
            // A signer who may replace does, though the object is younger than the form.
            try s.bind([("roles/storage.objectAdmin", ["serviceAccount:\(writer.email)"])])
            let replaced = try racedForm(key: "second.txt")
            #expect(replaced.status == 204, "\(replaced.text)")
            #expect(try s.bytes("second.txt") == Self.formFile)
        }
    }

    /// Past the first 16 KiB batch, so that its blob is registered while the form is still arriving: smaller files
    /// stay in memory until their commit (docs/architecture-notes.md, "Small objects inline").
    static let formFile = "intruder" + String(repeating: ".", count: 20_000)

    /// The writer's signed form for `key`, with the owner creating `key` once the form's file part has begun (the
    /// policy and the signer's access decided, the file's blob registered) and before the form ends.
    func racedForm(key: String) throws -> TestResponse {
        let boundary = "----silo-commit-access"
        let fields = try writer.postPolicyFields(bucket: s.bucketName, key: key, date: .now())
        var head: [UInt8] = []
        for (field, value) in fields {
            head += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(field)\"\r\n\r\n\(value)\r\n".utf8)
        }
        head += Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n\(Self.formFile)"
                .utf8)
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        let pending = {
            try s.server.metadata.garbageBlobs(registeredBefore: Timestamp(microseconds: .max), limit: 100).count
        }
        let before = try pending()
        let connection = s.server.client()
        try connection.sendRaw(
            Array(
                ("POST /\(s.bucketName) HTTP/1.1\r\nHost: 127.0.0.1:\(s.server.port)\r\n"
                    + "Content-Type: multipart/form-data; boundary=\(boundary)\r\n"
                    + "Content-Length: \(head.count + tail.count)\r\n\r\n").utf8) + head)
        // A wait, not a timing assert: until the file's blob is registered, a minute at most.
        let deadline = ContinuousClock.now + .seconds(60)
        while try pending() <= before {
            guard ContinuousClock.now < deadline else {
                Issue.record("the form's file part never began; the server's answer follows")
                return try connection.readResponse(method: "POST")
            }
            usleep(5_000)
        }
        try ownerCreates(key)
        try connection.sendRaw(tail)
        return try connection.readResponse(method: "POST")
    }

    @Test("single-request uploads (JSON media, XML PUT) are decided again when their body has arrived")
    func singleRequest() throws {
        let token = try s.token(writer)
        let media = try s.raced(
            "POST", "/upload/storage/v1/b/\(s.bucketName)/o?uploadType=media&name=\(name)", Array("intruder".utf8),
            headers: s.bearer(token)
        ) { try ownerCreates() }
        #expect(media.status == 403, "\(media.text)")
        #expect(try survived())
        let put = try s.raced("PUT", "/\(s.bucketName)/second.txt", Array("intruder".utf8), headers: s.bearer(token)) {
            try ownerCreates("second.txt")
        }
        #expect(put.status == 403, "\(put.text)")
        #expect(try survived("second.txt"))
    }

    @Test("copy and compose: the destination is decided against what is there when the new version commits")
    func copyAndCompose() throws {
        let token = try s.token(writer)
        #expect(try s.upload("source.txt", "intruder", headers: s.bearer(token)).status == 200)
        let copied = try s.raced(
            "POST", "\(s.objects)/source.txt/copyTo/b/\(s.bucketName)/o/\(name)", Array("{}".utf8),
            headers: s.bearer(token)
        ) { try ownerCreates() }
        #expect(copied.status == 403, "\(copied.text)")
        #expect(try survived())
        let composed = try s.raced(
            "POST", "\(s.objects)/second.txt/compose", Array(#"{"sourceObjects":[{"name":"source.txt"}]}"#.utf8),
            headers: s.bearer(token)
        ) { try ownerCreates("second.txt") }
        #expect(composed.status == 403, "\(composed.text)")
        #expect(try survived("second.txt"))
    }

    @Test("compose with deleteSourceObjects needs storage.objects.delete on every source")
    func composeDeletingSources() throws {
        try s.put("theirs.txt", "theirs")
        // It may read every object and create new ones, but not delete any.
        try s.bind([
            ("roles/storage.objectCreator", ["serviceAccount:\(writer.email)"]),
            ("roles/storage.objectViewer", ["serviceAccount:\(writer.email)"]),
        ])
        let body = #"{"sourceObjects":[{"name":"theirs.txt"}],"deleteSourceObjects":true}"#
        let response = try s.send("POST", "\(s.objects)/copy.txt/compose", body, headers: s.bearer(try s.token(writer)))
        #expect(response.status == 403, "\(response.text)")
        #expect(try s.bytes("theirs.txt") == "theirs")
        #expect(try s.send("GET", "\(s.objects)/copy.txt", headers: s.admin).status == 404)
    }
}

/// The v0 API's resumable sessions under Security Rules: the commit is decided for the verified principal that
/// started the session — kept in the session without its credential — against the object as it is at the commit.
@Suite struct V0SessionCommitTests {
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/{file} {
              allow read, write: if request.auth != null && request.auth.uid == uid;
            }
            match /once/{file} {
              allow read: if true;
              allow create: if resource == null && request.auth != null;
            }
          }
        }
        """
    static let adminKey = "v0-session-commit-admin-key-0123456789"
    let bucket = "demo.appspot.com"

    static func serve(directory: TemporaryDirectory? = nil) throws -> TestServer {
        var verifier = TokenVerifier.Configuration()
        verifier.emulator = true
        verifier.adminKeys = try AdminKeys(keys: [adminKey])
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let program = try RulesProgram.compile(source: rules, fileName: "v0-session.rules")
        let server = try TestServer(
            configuration: configuration, policy: RulesAccessPolicy(program: program),
            credentials: TokenVerifier(verifier), directory: directory)
        _ = try server.metadata.ensureBucket(try BucketName("demo.appspot.com"))
        return server
    }

    static func token(_ uid: String) -> String {
        let header = Base64.encodeURLSafe(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let claims = Base64.encodeURLSafe(Array(#"{"user_id":"\#(uid)","sub":"\#(uid)"}"#.utf8))
        return "\(header).\(claims)."
    }

    func start(_ client: HTTPTestClient, _ name: String, authorization: String) throws -> String {
        let started = try client.send(
            method: "POST", target: "/v0/b/\(bucket)/o?name=\(PercentCoding.encodeComponent(name))",
            headers: [
                "Authorization": authorization, "X-Goog-Upload-Protocol": "resumable",
                "X-Goog-Upload-Command": "start",
            ])
        #expect(started.status == 200, "\(started.text)")
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        return String(url[try #require(url.range(of: "/v0/")).lowerBound...])
    }

    func finalize(_ client: HTTPTestClient, _ session: String, _ body: String) throws -> TestResponse {
        // iOS sends no Authorization on chunks: the session acts as its starter.
        try client.send(
            method: "PUT", target: session,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"], body: Array(body.utf8))
    }

    /// Every byte of every file the stores keep under `directory` (the SQLite database, its WAL, the blobs).
    static func storedBytes(_ directory: TemporaryDirectory) -> [UInt8] {
        var all: [UInt8] = []
        let files =
            FileManager.default.enumerator(atPath: directory.path)?.allObjects.compactMap { $0 as? String } ?? []
        for file in files {
            all += (FileManager.default.contents(atPath: directory.path + "/" + file)).map(Array.init) ?? []
        }
        return all
    }

    static var onDisk: Bool { ProcessInfo.processInfo.environment["SILO_TEST_SERVER_METADATA"] != "postgres" }

    @Test("v0 resumable: a create-only rule is decided at finalize, for the starter, without its credential kept")
    func createOnlyAtCommit() throws {
        let server = try Self.serve()
        let client = server.client()
        let alice = "Firebase " + Self.token("alice")
        let session = try start(client, "once/x.txt", authorization: alice)
        let owner = try client.send(
            method: "POST", target: "/v0/b/\(bucket)/o?name=once%2Fx.txt",
            headers: ["Authorization": "Firebase " + Self.token("bob")], body: Array("bob's".utf8))
        #expect(owner.status == 200)
        #expect(try finalize(client, session, "alice's").status == 403)
        #expect(try client.get("/v0/b/\(bucket)/o/once%2Fx.txt?alt=media").text == "bob's")
        if Self.onDisk, let directory = server.directory {
            let leaked = Self.storedBytes(directory).contains(Array(Self.token("alice").utf8))
            #expect(!leaked, "no credential at rest")
        }
    }

    @Test("v0 resumable: the session keeps its starter across a restart, and never the admin key it was started with")
    func starterSurvivesRestart() throws {
        var server: TestServer? = try Self.serve()
        let directory = try #require(server?.directory)
        let first = try #require(server).client()
        let session = try start(first, "users/alice/a.txt", authorization: "Firebase " + Self.token("alice"))
        let admin = try start(first, "once/admin.txt", authorization: "Bearer " + Self.adminKey)
        #expect(
            try first.send(
                method: "POST", target: "/v0/b/\(bucket)/o?name=once%2Fadmin.txt",
                headers: ["Authorization": "Firebase " + Self.token("bob")], body: Array("bob's".utf8)
            ).status == 200)
        server?.shutdown()
        server = nil
        if Self.onDisk {
            let leaked = Self.storedBytes(directory).contains(Array(Self.adminKey.utf8))
            #expect(!leaked, "no admin key at rest")
        }
        let restarted = try Self.serve(directory: directory)
        let client = restarted.client()
        #expect(try finalize(client, session, "alice's").status == 200, "committed as alice, whose folder it is")
        #expect(try finalize(client, admin, "admin's").status == 200, "committed as the admin, who may replace")
        #expect(try client.get("/v0/b/\(bucket)/o/once%2Fadmin.txt?alt=media").text == "admin's")
        let id = try #require(session.split(separator: "upload_id=").last?.split(separator: "&").first)
        let stored = try restarted.metadata.session(id: String(id))
        #expect(stored?.starter?.uid == "alice")
        #expect(stored?.starter?.credential == "")
    }
}
