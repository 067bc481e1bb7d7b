import SiloCore
import SiloHTTP
import SiloHashing
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// v0 uploads.
@Suite struct V0UploadTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer(policy: VectorPolicy())
        client = server.client()
    }

    func start(_ name: String, headers extra: HTTPHeaders = [:], body: String = "", host: String? = nil) throws -> (
        TestResponse, String
    ) {
        var headers: HTTPHeaders = ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"]
        for (k, v) in extra { headers.set(k, v) }
        if let host { headers.set("Host", host) }
        let r = try client.send(
            method: "POST", target: bucketPath() + "?name=" + PercentCoding.encodeComponent(name), headers: headers,
            body: bytes(body))
        return (r, r.headers["X-Goog-Upload-URL"] ?? "")
    }

    /// The path+query of an absolute upload URL.
    func target(_ url: String) -> String {
        let afterScheme = url.split(separator: "//", maxSplits: 1)[1]
        return String(afterScheme[afterScheme.firstIndex(of: "/")!...])
    }

    func command(
        _ url: String, _ command: String, method: String = "POST", offset: Int? = nil, body: [UInt8] = [],
        headers extra: HTTPHeaders = [:]
    ) throws -> TestResponse {
        var headers: HTTPHeaders = ["X-Goog-Upload-Command": command]
        if let offset { headers.set("X-Goog-Upload-Offset", String(offset)) }
        for (k, v) in extra { headers.set(k, v) }
        return try client.send(method: method, target: target(url), headers: headers, body: body)
    }

    @Test("8.2.10 media upload defaults")
    func media() throws {
        let r = try client.mediaUpload("public/m.bin", bytes("hello world"))
        #expect(r.status == 200)
        let meta = try r.json()
        #expect(meta["contentType"] == .string("application/octet-stream"))
        #expect(meta["metageneration"] == .string("1"))
        #expect(meta["downloadTokens"]?.stringValue?.isEmpty == false)
        #expect(meta["contentDisposition"] != nil)
        #expect(meta["md5Hash"] == .string(Base64.encode(MD5Hasher.digest(bytes("hello world")))))
        #expect(meta["crc32c"] == .string(Checksums.crc32cBase64(CRC32C.checksum(bytes("hello world")))))
    }

    @Test("8.2.11 multipart with custom metadata")
    func multipart() throws {
        let r = try client.multipartUpload(
            "public/p.txt", metadata: #"{"name":"public/p.txt","contentType":"text/plain","metadata":{"k":"v"}}"#,
            bytes("multi"))
        #expect(r.status == 200)
        let meta = try r.json()
        #expect(meta["contentType"] == .string("text/plain"))
        #expect(meta["metadata"] == .object(["k": .string("v")]))
        #expect(try client.get(objectPath("public/p.txt") + "?alt=media").text == "multi")
    }

    @Test("8.2.12 tokens from custom metadata")
    func multipartTokens() throws {
        let r = try client.multipartUpload(
            "public/t.txt", metadata: #"{"name":"public/t.txt","metadata":{"firebaseStorageDownloadTokens":"t1,t2"}}"#,
            bytes("x"))
        let meta = try r.json()
        #expect(meta["downloadTokens"] == .string("t1,t2"))
        #expect(meta["metadata"] == nil)
    }

    @Test("8.2.13 multipart with a bad content type")
    func badContentType() throws {
        let r = try client.send(
            method: "POST", target: bucketPath() + "?name=public/x",
            headers: ["X-Goog-Upload-Protocol": "multipart", "Content-Type": "foo"], body: bytes("x"))
        #expect(r.status == 400)
        #expect(r.text.contains("Bad content type."))
    }

    @Test("8.2.14 multipart with Python framing")
    func pythonMultipart() throws {
        let boundary = "===============1234567890123456789=="
        var body = bytes(
            "--\(boundary)\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n{\"name\": \"public/py.txt\"}\r\n--\(boundary)\r\ncontent-type: text/plain\r\ncontent-transfer-encoding: binary\r\n\r\n"
        )
        body += bytes("python bytes")
        body += bytes("\r\n--\(boundary)--\r\n")
        let r = try client.send(
            method: "POST", target: bucketPath() + "?name=public/py.txt",
            headers: [
                "X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=\"\(boundary)\"",
            ], body: body)
        #expect(r.status == 200)
        #expect(try client.get(objectPath("public/py.txt") + "?alt=media").text == "python bytes")
        #expect(try r.string("contentType") == "text/plain")
    }

    @Test("8.2.15–16 resumable (JS form)")
    func resumableJS() throws {
        let (started, url) = try start(
            "public/r.png",
            headers: [
                "X-Goog-Upload-Header-Content-Length": "300000", "X-Goog-Upload-Header-Content-Type": "image/png",
                "Content-Type": "application/json; charset=utf-8",
            ], body: #"{"name":"public/r.png","contentType":"image/png"}"#)
        #expect(started.status == 200)
        #expect(started.headers["X-Goog-Upload-Status"] == "active")
        #expect(url.hasPrefix("http://127.0.0.1:\(server.port)/v0/b/\(bucket)/o?"))
        #expect(Int(started.headers["X-Goog-Upload-Chunk-Granularity"] ?? "") != nil)
        let data = pattern(300_000)
        let first = try command(url, "upload", offset: 0, body: Array(data[0..<262_144]))
        #expect(first.status == 200)
        #expect(first.headers["X-Goog-Upload-Status"] == "active")
        let query = try command(url, "query")
        #expect(query.headers["X-Goog-Upload-Status"] == "active")
        #expect(query.headers["X-Goog-Upload-Size-Received"] == "262144")
        let last = try command(url, "upload, finalize", offset: 262_144, body: Array(data[262_144...]))
        #expect(last.status == 200)
        #expect(last.headers["X-Goog-Upload-Status"] == "final")
        let meta = try last.json()
        #expect(meta["size"] == .string("300000"))
        #expect(meta["contentType"] == .string("image/png"))
        #expect(try client.get(objectPath("public/r.png") + "?alt=media").body == data)
    }

    @Test("8.2.17 upload URL uses the request's Host")
    func uploadURLHost() throws {
        let (_, url) = try start("public/h.bin", host: "10.0.2.2:9199")
        #expect(url.hasPrefix("http://10.0.2.2:9199/v0/b/"))
    }

    @Test("8.2.18 iOS form: PUT chunks without Authorization act as the starter")
    func resumableIOS() throws {
        let headers: HTTPHeaders = [
            "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
            "X-Goog-Upload-Content-Type": "image/png", "X-Goog-Upload-Content-Length": "5",
            "Authorization": "Firebase \(emulatorToken(uid: "u1"))", "Content-Type": "application/json; charset=UTF-8",
        ]
        let started = try client.send(
            method: "POST", target: objectPath("testing/i.png") + "?uploadType=resumable&name=testing%2Fi.png",
            headers: headers,
            body: bytes(#"{"bucket":"","contentType":"image/png","name":"testing/i.png","metadata":null}"#))
        #expect(started.status == 200)
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let done = try command(
            url, "upload, finalize", method: "PUT", offset: 0, body: bytes("hello"),
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Content-Length": "5"])
        #expect(done.status == 200)
        #expect(done.headers["X-Goog-Upload-Status"] == "final")
        #expect(try done.string("contentType") == "image/png")
    }

    @Test("8.2.18 a resumable upload started without identity is denied at start, before a session exists")
    func resumableDeniedWithoutIdentity() throws {
        // The identity of a session is its start request's (iOS sends Authorization only there), so a start the
        // rules deny is refused at once instead of taking bytes it can never commit.
        let (r, url) = try start("testing/anon.png")
        #expect(r.status == 403)
        #expect(url.isEmpty)
        #expect(try server.metadata.sessions(updatedBefore: Timestamp(microseconds: .max)).isEmpty)
    }

    @Test("8.2.19 Android form: content type only in the header, empty start body")
    func resumableAndroid() throws {
        let (_, url) = try start("public/a.jpg", headers: ["X-Goog-Upload-Header-Content-Type": "image/jpeg"])
        let done = try command(
            url, "upload, finalize", offset: 0, body: bytes("jpeg"), headers: ["X-Goog-Upload-Protocol": "resumable"])
        #expect(try done.string("contentType") == "image/jpeg")
    }

    @Test("8.2.20 empty object through resumable")
    func resumableEmpty() throws {
        let (_, url) = try start("public/empty.bin")
        let done = try command(url, "finalize")
        #expect(done.status == 200)
        let meta = try done.json()
        #expect(meta["size"] == .string("0"))
        #expect(meta["md5Hash"] == .string("1B2M2Y8AsgTpgAmY7PhCfg=="))
        #expect(meta["crc32c"] == .string("AAAAAA=="))
    }

    @Test("App Check tokens, Android's failure placeholder included, are accepted as absent")
    func appCheckPlaceholder() throws {
        // What the Android SDK sends when App Check cannot get a token: a placeholder, never a reason to refuse.
        let placeholder = "eyJlcnJvciI6IlVOS05PV05fRVJST1IifQ=="
        for (index, token) in [placeholder, "not-a-jwt", ""].enumerated() {
            let r = try client.mediaUpload(
                "public/appcheck-\(index).txt", bytes("x"), headers: ["X-Firebase-AppCheck": token])
            #expect(r.status == 200, "\(token)")
            let read = try client.get(
                objectPath("public/appcheck-\(index).txt") + "?alt=media", headers: ["X-Firebase-AppCheck": token])
            #expect(read.status == 200)
        }
    }

    @Test("a finalize without upload stores no bytes, whatever its body")
    func finalizeBodyIsNotData() throws {
        let (_, url) = try start("public/fin.txt")
        #expect(try command(url, "upload", offset: 0, body: bytes("hello")).status == 200)
        let done = try command(url, "finalize", body: bytes("{}"))
        #expect(done.status == 200)
        #expect(try done.string("size") == "5")
        #expect(try client.get(objectPath("public/fin.txt") + "?alt=media").text == "hello")
    }

    @Test("8.2.21 finalize twice; a denied finalize repeats its 403")
    func finalizeTwice() throws {
        let (_, url) = try start("public/twice.txt")
        let a = try command(url, "upload, finalize", offset: 0, body: bytes("x"))
        let b = try command(url, "finalize")
        #expect(a.status == 200 && b.status == 200)
        #expect(b.headers["X-Goog-Upload-Status"] == "final")
        #expect(try a.string("generation") == b.string("generation"))
        let (_, denied) = try start("deny-empty/zero")
        let d1 = try command(denied, "finalize")
        let d2 = try command(denied, "finalize")
        #expect(d1.status == 403 && d2.status == 403)
        #expect(d1.headers["X-Goog-Upload-Status"] == "final" && d2.headers["X-Goog-Upload-Status"] == "final")
        #expect(try client.get(objectPath("deny-empty/zero"), headers: ["Authorization": "Bearer owner"]).status == 404)
    }

    @Test("8.2.22 cancel semantics; unknown and missing upload ids")
    func cancel() throws {
        let (_, url) = try start("public/c.txt")
        #expect(try command(url, "cancel").status == 200)
        #expect(try command(url, "cancel").status == 200)
        #expect(try command(url, "finalize").status == 400)
        #expect(try command(url, "finalize").status == 400)
        #expect(try command(url, "query").headers["X-Goog-Upload-Status"] == "cancelled")
        let (_, done) = try start("public/c2.txt")
        _ = try command(done, "finalize")
        #expect(try command(done, "cancel").status == 400)
        let unknown = try client.send(
            method: "POST", target: bucketPath() + "?name=x&upload_id=foo&upload_protocol=resumable",
            headers: ["X-Goog-Upload-Command": "query"])
        #expect(unknown.status == 404)
        let missing = try client.send(
            method: "POST", target: bucketPath() + "?name=x&upload_id=&upload_protocol=resumable",
            headers: ["X-Goog-Upload-Command": "upload"])
        #expect(missing.status == 400)
    }

    @Test("8.2.23 commands without the protocol header work")
    func noProtocolHeader() throws {
        let r = try client.send(
            method: "POST", target: bucketPath() + "?name=public/np.txt", headers: ["X-Goog-Upload-Command": "start"])
        let url = try #require(r.headers["X-Goog-Upload-URL"])
        let done = try command(url, "upload, finalize", offset: 0, body: bytes("np"))
        #expect(done.status == 200)
    }

    @Test("8.2.24 a wrong offset is refused and changes nothing")
    func wrongOffset() throws {
        let (_, url) = try start("public/o.bin")
        _ = try command(url, "upload", offset: 0, body: pattern(262_144))
        let wrong = try command(url, "upload", offset: 0, body: pattern(1000))
        #expect((400..<500).contains(wrong.status))
        #expect(wrong.headers["X-Goog-Upload-Status"] == "active")
        #expect(wrong.headers["X-Goog-Upload-Size-Received"] == "262144")
        #expect(try command(url, "query").headers["X-Goog-Upload-Size-Received"] == "262144")
    }

    @Test("8.2.25 overwrite gives a new generation and the new bytes")
    func overwrite() throws {
        let a = try client.mediaUpload("public/o.txt", bytes("first")).json()
        let b = try client.mediaUpload("public/o.txt", bytes("second")).json()
        #expect(a["generation"] != b["generation"])
        #expect(Int64(b["generation"]!.stringValue!)! > Int64(a["generation"]!.stringValue!)!)
        #expect(b["metageneration"] == .string("1"))
        #expect(try client.get(objectPath("public/o.txt") + "?alt=media").text == "second")
    }

    @Test("declared length mismatch at finalize is refused")
    func declaredLengthMismatch() throws {
        let (_, url) = try start("public/len.bin", headers: ["X-Goog-Upload-Header-Content-Length": "10"])
        let r = try command(url, "upload, finalize", offset: 0, body: bytes("short"))
        #expect(r.status == 400)
        #expect(try client.get(objectPath("public/len.bin")).status == 404)
    }

    @Test("a resumable session survives a server restart")
    func sessionSurvivesRestart() throws {
        let directory = try TemporaryDirectory()
        var first: TestServer? = try TestServer(policy: VectorPolicy(), directory: directory)
        let c1 = first!.client()
        let started = try c1.send(
            method: "POST", target: bucketPath() + "?name=public/restart.bin",
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"])
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let data = pattern(600_000, seed: 7)
        let path = target(url)
        #expect(
            try c1.send(
                method: "POST", target: path,
                headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"],
                body: Array(data[0..<262_144])
            ).status == 200)
        first!.shutdown()
        first = nil
        let second = try TestServer(policy: VectorPolicy(), directory: directory)
        let c2 = second.client()
        let q = try c2.send(method: "POST", target: path, headers: ["X-Goog-Upload-Command": "query"])
        #expect(q.headers["X-Goog-Upload-Size-Received"] == "262144")
        let done = try c2.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "262144"],
            body: Array(data[262_144...]))
        #expect(done.status == 200)
        #expect(try done.string("md5Hash") == Base64.encode(MD5Hasher.digest(data)))
        #expect(try c2.get(objectPath("public/restart.bin") + "?alt=media").body == data)
    }
}
