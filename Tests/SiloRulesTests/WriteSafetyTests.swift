import Foundation
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
import Synchronization
import Testing

/// Write safety through a live server with real rules: access is decided before the first byte is
/// stored; a finalize whose answer was lost and is retried keeps the object and its bytes; a rules decision holds
/// for the version it was made about, even when another write races it.
@Suite struct WriteSafetyTests {
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/{file} {
              allow read, write: if request.auth != null && request.auth.uid == uid;
            }
            // Only these bytes ("hello"), whoever sends them.
            match /exact/{file} {
              allow create: if request.resource.md5Hash == '\(Base64.encode(MD5Hasher.digest(Array("hello".utf8))))';
            }
            // The same, and only when signed in: an anonymous upload is certainly denied, bytes or not.
            match /signed/{file} {
              allow create: if request.resource.md5Hash == '\(Base64.encode(MD5Hasher.digest(Array("hello".utf8))))'
                && request.auth != null;
            }
            // Overwrite only with identical content: the rule compares the new bytes with the old.
            match /same/{file} {
              allow read: if true;
              allow write: if resource == null || (request.resource.md5Hash == resource.md5Hash
                && request.resource.crc32c == resource.crc32c && request.resource.size == resource.size
                && request.resource.etag is string);
            }
            match /once/{file} {
              allow read: if true;
              allow create: if resource == null;
            }
          }
        }
        """

    let server: TestServer
    let client: HTTPTestClient
    let hooks = StoreCallHooks()

    init() throws {
        let program = try RulesProgram.compile(source: Self.rules, fileName: "write-safety.rules")
        var configuration = ServerConfiguration()
        configuration.maxObjectSize = 1 << 20
        server = try TestServer(
            configuration: configuration, policy: RulesAccessPolicy(program: program), hooks: hooks)
        client = server.client()
    }

    let bucketName = "demo.appspot.com"
    var bucketPath: String { "/v0/b/\(bucketName)/o" }
    func objectPath(_ name: String) -> String { "\(bucketPath)/" + PercentCoding.encodeComponent(name) }

    func auth(_ uid: String) -> HTTPHeaders {
        ["Authorization": "Firebase \(emulatorToken(uid: uid))"]
    }

    func emulatorToken(uid: String) -> String {
        let header = Base64.encodeURLSafe(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let claims = Base64.encodeURLSafe(Array(#"{"user_id":"\#(uid)","sub":"\#(uid)"}"#.utf8))
        return "\(header).\(claims)."
    }

    /// Files in the blob store and blobs the metadata store tracks as pending: what an upload leaves behind.
    func footprint() throws -> (files: Int, pending: Int) {
        let root = try #require(server.directory).path + "/blobs"
        let files = FileManager.default.enumerator(atPath: root)?.allObjects.compactMap { $0 as? String }.filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }
        let pending = try server.metadata.garbageBlobs(registeredBefore: Timestamp(microseconds: .max), limit: 1000)
        return (files?.count ?? 0, pending.count)
    }

    func media(_ name: String, _ body: [UInt8], headers: HTTPHeaders = [:]) throws -> TestResponse {
        try client.send(
            method: "POST", target: bucketPath + "?name=" + PercentCoding.encodeComponent(name), headers: headers,
            body: body)
    }

    func multipart(_ name: String, _ body: [UInt8], headers extra: HTTPHeaders = [:]) throws -> TestResponse {
        var headers = extra
        headers.set("X-Goog-Upload-Protocol", "multipart")
        headers.set("Content-Type", "multipart/related; boundary=B0UND")
        let payload =
            Array(
                "--B0UND\r\nContent-Type: application/json\r\n\r\n{}\r\n--B0UND\r\nContent-Type: text/plain\r\n\r\n"
                    .utf8)
            + body + Array("\r\n--B0UND--".utf8)
        return try client.send(
            method: "POST", target: bucketPath + "?name=" + PercentCoding.encodeComponent(name), headers: headers,
            body: payload)
    }

    func start(_ name: String, declared: Int? = nil, headers extra: HTTPHeaders = [:]) throws -> TestResponse {
        var headers = extra
        headers.set("X-Goog-Upload-Protocol", "resumable")
        headers.set("X-Goog-Upload-Command", "start")
        if let declared { headers.set("X-Goog-Upload-Header-Content-Length", String(declared)) }
        return try client.send(
            method: "POST", target: bucketPath + "?name=" + PercentCoding.encodeComponent(name), headers: headers)
    }

    func sessionPath(_ started: TestResponse) throws -> String {
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        return String(url[try #require(url.range(of: "/v0/")).lowerBound...])
    }

    // MARK: Decided before the first byte

    @Test("denied uploads store nothing: media, multipart and resumable start, anonymous or another user")
    func deniedBeforeFirstByte() throws {
        let before = try footprint()
        let body = [UInt8](repeating: 7, count: 512 << 10)
        for headers in [[:], auth("mallory")] as [HTTPHeaders] {
            #expect(try media("users/alice/a.bin", body, headers: headers).status == 403)
            #expect(try multipart("users/alice/b.bin", body, headers: headers).status == 403)
            #expect(try start("users/alice/c.bin", declared: body.count, headers: headers).status == 403)
        }
        // Anonymous can never pass `request.auth != null`, so the unknown checksum does not save the upload.
        #expect(try media("signed/d.txt", Array("hello".utf8)).status == 403)
        let after = try footprint()
        #expect(after.files == before.files)
        #expect(after.pending == before.pending)
        #expect(try server.metadata.sessions(updatedBefore: Timestamp(microseconds: .max)).isEmpty)
        // The owner may.
        #expect(try media("users/alice/a.bin", body, headers: auth("alice")).status == 200)
    }

    @Test("a rule on the bytes' checksum passes the early check and decides at commit")
    func checksumRuleDecidesAtCommit() throws {
        #expect(try media("exact/good.txt", Array("hello".utf8)).status == 200)
        #expect(try media("exact/bad.txt", Array("other".utf8)).status == 403)
        #expect(try multipart("exact/good2.txt", Array("hello".utf8)).status == 200)
        #expect(
            try server.metadata.object(try BucketName(bucketName), try ObjectName("exact/bad.txt"), generation: nil)
                == nil)
        let started = try start("exact/r.txt", declared: 5)
        #expect(started.status == 200)
        let done = try client.send(
            method: "POST", target: try sessionPath(started),
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"],
            body: Array("hello".utf8))
        #expect(done.status == 200)
        // Signed-in users with the right bytes pass; the anonymous one was refused before storing anything.
        #expect(try media("signed/ok.txt", Array("hello".utf8), headers: auth("bob")).status == 200)
    }

    @Test("rules read the final bytes' md5Hash, crc32c, size and etag on every v0 upload path; a deny keeps nothing")
    func overwriteOnlyWithIdenticalContent() throws {
        let before = try footprint()
        #expect(try media("same/a.txt", Array("hello".utf8)).status == 200)
        let resumable = { (body: String) throws -> Int in
            let started = try self.start("same/a.txt", declared: body.utf8.count)
            guard started.status == 200 else { return started.status }
            return try self.client.send(
                method: "POST", target: try self.sessionPath(started),
                headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"],
                body: Array(body.utf8)
            ).status
        }
        // The same bytes pass through every path; other bytes are denied at commit on every path.
        #expect(try media("same/a.txt", Array("hello".utf8)).status == 200)
        #expect(try multipart("same/a.txt", Array("hello".utf8)).status == 200)
        #expect(try resumable("hello") == 200)
        #expect(try media("same/a.txt", Array("jello".utf8)).status == 403)
        #expect(try multipart("same/a.txt", Array("jello".utf8)).status == 403)
        #expect(try resumable("jello") == 403)
        #expect(try client.get(objectPath("same/a.txt") + "?alt=media").text == "hello")
        let after = try footprint()
        // Five bytes are kept inline, in the metadata store, rather than as a file.
        let live = try #require(
            try server.metadata.object(try BucketName(bucketName), try ObjectName("same/a.txt"), generation: nil))
        let inline = try live.blobID.isInline && server.metadata.inlineBlob(live.blobID) != nil ? 1 : 0
        #expect(after.files + inline == before.files + 1, "only the live version's bytes remain")
        #expect(after.pending == before.pending)
    }

    @Test("a resumable session takes no byte past its declared length or the object size limit")
    func sessionBounds() throws {
        let started = try start("users/alice/s.bin", declared: 10, headers: auth("alice"))
        let path = try sessionPath(started)
        let over = try client.send(
            method: "POST", target: path, headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"],
            body: [UInt8](repeating: 1, count: 11))
        #expect(over.status == 400)
        #expect(try start("users/alice/big.bin", declared: 2 << 20, headers: auth("alice")).status == 413)
        // Undeclared length: refused when the bytes pass the server's limit.
        let open = try start("users/alice/open.bin", headers: auth("alice"))
        let tooMuch = try client.send(
            method: "POST", target: try sessionPath(open),
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"],
            body: [UInt8](repeating: 2, count: (1 << 20) + 1))
        #expect(tooMuch.status == 413)
        #expect(
            try media("users/alice/m.bin", [UInt8](repeating: 3, count: (1 << 20) + 1), headers: auth("alice")).status
                == 413)
        #expect(try client.get(objectPath("users/alice/open.bin"), headers: auth("alice")).status == 404)
    }

    @Test("per-caller quotas: open sessions and the bytes they hold, 429 past either; other callers unaffected")
    func perCallerQuotas() throws {
        var configuration = ServerConfiguration()
        configuration.maxSessionsPerCaller = 3
        configuration.maxPendingBytesPerCaller = 1000
        let program = try RulesProgram.compile(source: Self.rules, fileName: "write-safety.rules")
        let quoted = try TestServer(configuration: configuration, policy: RulesAccessPolicy(program: program))
        let c = quoted.client()
        func start(_ name: String, _ uid: String, declared: Int? = nil) throws -> TestResponse {
            var headers = auth(uid)
            headers.set("X-Goog-Upload-Protocol", "resumable")
            headers.set("X-Goog-Upload-Command", "start")
            if let declared { headers.set("X-Goog-Upload-Header-Content-Length", String(declared)) }
            return try c.send(method: "POST", target: bucketPath + "?name=users%2F\(uid)%2F\(name)", headers: headers)
        }
        let opened = try (0..<3).map { try start("s\($0)", "alice") }
        #expect(opened.allSatisfy { $0.status == 200 })
        let fourth = try start("s3", "alice")
        #expect(fourth.status == 429)
        #expect(try fourth.json()["error"]?.objectValue?["code"]?.int64Value == 429)
        #expect(try start("s0", "bob").status == 200, "bob has his own quota")
        // Cancelling one frees a place.
        _ = try c.send(method: "POST", target: try sessionPath(opened[0]), headers: ["X-Goog-Upload-Command": "cancel"])
        #expect(try start("s4", "alice").status == 200)
        // Bytes: a declared size over what is left is refused at start; a chunk that would pass it, before it lands.
        #expect(try start("big", "bob", declared: 1001).status == 429)
        let chunked = try start("chunks", "bob")
        let path = try sessionPath(chunked)
        let first = try c.send(
            method: "POST", target: path, headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"],
            body: [UInt8](repeating: 1, count: 900))
        #expect(first.status == 200)
        let second = try c.send(
            method: "POST", target: path, headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "900"],
            body: [UInt8](repeating: 2, count: 200))
        #expect(second.status == 429)
        #expect(second.headers["X-Goog-Upload-Size-Received"] == "900")
    }

    @Test("a session answers only on its own bucket's URLs; a GCS session never through the v0 API")
    func sessionsStayOnTheirAPI() throws {
        // A GCS session, started by the admin through the GCS API (emulator mode off, so it needs the admin key).
        let adminKey = "write-safety-admin-key-0123456789"
        var verifier = TokenVerifier.Configuration()
        verifier.emulator = true
        verifier.adminKeys = try AdminKeys(keys: [adminKey])
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let program = try RulesProgram.compile(source: Self.rules, fileName: "write-safety.rules")
        let secured = try TestServer(
            configuration: configuration, policy: RulesAccessPolicy(program: program),
            credentials: TokenVerifier(verifier))
        let c = secured.client()
        _ = try secured.metadata.ensureBucket(try BucketName(bucketName))
        let started = try c.send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucketName)/o?uploadType=resumable&name=users%2Fbob%2Fp.txt",
            headers: ["Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"], body: Array("{}".utf8)
        )
        #expect(started.status == 200)
        let location = try #require(started.headers["Location"])
        let id = String(try #require(location.split(separator: "upload_id=").last))
        // Anonymous, through a v0 URL of the same or another bucket: no such session.
        for target in ["/v0/b/\(bucketName)/o?upload_id=\(id)", "/v0/b/other.appspot.com/o?upload_id=\(id)"] {
            let planted = try c.send(
                method: "POST", target: target,
                headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"],
                body: Array("planted".utf8))
            #expect(planted.status == 404, "\(target)")
        }
        #expect(
            try secured.metadata.object(try BucketName(bucketName), try ObjectName("users/bob/p.txt"), generation: nil)
                == nil)
        // A v0 session on another bucket's URL is not found either.
        var startHeaders = auth("alice")
        startHeaders.set("X-Goog-Upload-Protocol", "resumable")
        startHeaders.set("X-Goog-Upload-Command", "start")
        let v0 = try c.send(method: "POST", target: bucketPath + "?name=users%2Falice%2Fv.txt", headers: startHeaders)
        let v0ID = String(
            try #require(try sessionPath(v0).split(separator: "upload_id=").last?.split(separator: "&").first))
        let elsewhere = try c.send(
            method: "POST", target: "/v0/b/other.appspot.com/o?upload_id=\(v0ID)",
            headers: ["X-Goog-Upload-Command": "query"])
        #expect(elsewhere.status == 404)
    }

    // MARK: A retried finalize

    @Test("a finalize whose commit answer was lost is retried: same object, bytes intact")
    func retriedFinalize() throws {
        let content = Array("precious bytes".utf8)
        let started = try start("users/alice/p.bin", declared: content.count, headers: auth("alice"))
        let path = try sessionPath(started)
        // The commit happens, but the server hears of a failure (a dropped PostgreSQL connection after COMMIT).
        let failures = Mutex(1)
        hooks.set { call, moment in
            guard call.method == "insertObject", moment == .after else { return }
            let fail = failures.withLock { left -> Bool in
                defer { left -= 1 }
                return left > 0
            }
            if fail { throw StorageError(.ioError, "connection to the metadata store was lost") }
        }
        let first = try client.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"], body: content)
        #expect(first.status == 500)
        hooks.set(nil)
        let key = (try BucketName(bucketName), try ObjectName("users/alice/p.bin"))
        let committed = try #require(try server.metadata.object(key.0, key.1, generation: nil))
        let retry = try client.send(method: "POST", target: path, headers: ["X-Goog-Upload-Command": "finalize"])
        #expect(retry.status == 200)
        // The retry answers with the version the first attempt made; it commits nothing new.
        #expect(try retry.json()["generation"]?.stringValue == String(committed.generation))
        #expect(try server.metadata.object(key.0, key.1, generation: nil)?.generation == committed.generation)
        _ = server.app.collectGarbage(graceSeconds: 0)
        let download = try client.get(objectPath("users/alice/p.bin") + "?alt=media", headers: auth("alice"))
        #expect(download.status == 200)
        #expect(download.body == content)
    }

    // MARK: Rules decisions are pinned

    @Test("two racing creates cannot both pass a create-only rule")
    func createOnlyRace() throws {
        let raced = Mutex(false)
        let port = server.port
        let racerStatus = Mutex(0)
        // Just before the first upload commits, another upload of the same name gets in.
        hooks.set { call, moment in
            guard call.method == "insertObject", moment == .before, call.subject?.hasSuffix("once/x") == true else {
                return
            }
            let go = raced.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            guard go else { return }
            let r = try HTTPTestClient(port: port).send(
                method: "POST", target: "/v0/b/demo.appspot.com/o?name=once%2Fx", body: Array("second".utf8))
            racerStatus.withLock { $0 = r.status }
        }
        let first = try media("once/x", Array("first".utf8))
        hooks.set(nil)
        #expect(racerStatus.withLock { $0 } == 200)
        // The first upload's decision was about "no object"; there is one now, so it is decided again and denied.
        #expect(first.status == 403)
        #expect(try client.get(objectPath("once/x") + "?alt=media").text == "second")
    }

    @Test("a metadata update is decided about the generation it read")
    func updatePinsGeneration() throws {
        #expect(try media("users/alice/u.txt", Array("v1".utf8), headers: auth("alice")).status == 200)
        let overwritten = Mutex(false)
        let port = server.port
        let aliceAuth = auth("alice")
        hooks.set { call, moment in
            guard call.method == "updateObject", moment == .before else { return }
            let go = overwritten.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            guard go else { return }
            _ = try HTTPTestClient(port: port).send(
                method: "POST", target: "/v0/b/demo.appspot.com/o?name=users%2Falice%2Fu.txt", headers: aliceAuth,
                body: Array("v2".utf8))
        }
        var headers = auth("alice")
        headers.set("Content-Type", "application/json")
        let patched = try client.send(
            method: "PATCH", target: objectPath("users/alice/u.txt"), headers: headers,
            body: Array(#"{"metadata":{"k":"v"}}"#.utf8))
        hooks.set(nil)
        #expect(patched.status == 200)
        // The PATCH landed on the version it was decided about again after the race: v2, which it read afresh.
        let live = try #require(
            try server.metadata.object(try BucketName(bucketName), try ObjectName("users/alice/u.txt"), generation: nil)
        )
        #expect(live.fields.customMetadata["k"] == "v")
        #expect(try client.get(objectPath("users/alice/u.txt") + "?alt=media", headers: auth("alice")).text == "v2")
    }
}
