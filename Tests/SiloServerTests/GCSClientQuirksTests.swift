import SiloCore
import SiloHTTP
import SiloServer
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// What the JSON API's clients send that a textbook reading of the API would refuse, each exactly
/// as the client frames it (docs/gcs-api.md, "Client quirks"), on a live socket.
@Suite struct GCSClientQuirksTests {
    let server: TestServer
    let client: HTTPTestClient
    let bucketName = "quirks"

    init() throws {
        server = try TestServer()
        client = server.client()
        let made = try client.send(
            method: "POST", target: "/storage/v1/b?project=demo", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"name":"quirks"}"#))
        #expect(made.status == 200)
    }

    func objectURL(_ name: String) -> String {
        "/storage/v1/b/\(bucketName)/o/" + PercentCoding.encodeComponent(name)
    }

    func media(_ name: String) throws -> [UInt8] { try client.get(objectURL(name) + "?alt=media").body }

    /// gsutil (apitools, Python's email generator): the boundary in single quotes, `=` signs in it, bare LF line
    /// ends, a MIME-Version header in each part; a media part that ends in CR keeps it.
    @Test("gsutil's multipart framing: a single-quoted boundary and bare LF")
    func gsutilMultipart() throws {
        let boundary = "===============7330845974216740156=="
        let data = pattern(70_000) + [0x0D]
        var body = bytes(
            "--\(boundary)\nContent-Type: application/json\nMIME-Version: 1.0\n\n"
                + #"{"name": "g/small.txt", "contentType": "text/plain"}"#
                + "\n--\(boundary)\nContent-Type: text/plain\nMIME-Version: 1.0\nContent-Transfer-Encoding: binary\n\n")
        body += data + bytes("\n--\(boundary)--\n")
        let r = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucketName)/o?uploadType=multipart",
            headers: ["Content-Type": "multipart/related; boundary='\(boundary)'"], body: body)
        #expect(r.status == 200, "\(r.text.prefix(300))")
        #expect(try r.string("name") == "g/small.txt")
        #expect(try r.string("size") == String(data.count))
        #expect(try media("g/small.txt") == data)
    }

    /// Starts a resumable upload; returns the session path (Location without the scheme and host).
    func startResumable(_ name: String, root: String = "/upload/storage/v1") throws -> String {
        let r = try client.send(
            method: "POST",
            target: "\(root)/b/\(bucketName)/o?uploadType=resumable&name=" + PercentCoding.encodeComponent(name),
            headers: ["Content-Type": "application/json; charset=UTF-8", "X-Upload-Content-Type": "text/plain"],
            body: bytes("{}"))
        #expect(r.status == 200, "\(r.text.prefix(300))")
        // The Location is absolute (built from the Host): keep its path and query.
        let location = try #require(r.headers["Location"])
        let afterScheme = location.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        return "/" + String(try #require(afterScheme.last))
    }

    @Test("gsutil starts resumable uploads at /resumable/upload/storage/v1/b/{b}/o")
    func resumableRoot() throws {
        let session = try startResumable("r.bin", root: "/resumable/upload/storage/v1")
        let data = pattern(300_000, seed: 3)
        let done = try client.send(
            method: "PUT", target: session, headers: ["Content-Range": "bytes 0-\(data.count - 1)/\(data.count)"],
            body: data)
        #expect(done.status == 200, "\(done.text.prefix(300))")
        #expect(try done.string("name") == "r.bin")
        #expect(try media("r.bin") == data)
    }

    @Test("the resumable root routes uploads only")
    func resumableRoutes() throws {
        let upload = RoutedTarget.gcs(.gcsUpload(try BucketName("bk")))
        #expect(try routed("/resumable/upload/storage/v1/b/bk/o") == upload)
        #expect(try routed("/resumable/upload/b/bk/o") == upload)
        for other in ["/resumable/upload/storage/v1/b/bk", "/resumable/storage/v1/b/bk/o", "/resumable", "/resumable/"]
        {
            #expect(try routed(other) == .gcs(.unknown(jsonAPIPath: false)), "\(other)")
        }
    }

    /// Google's Go libraries (rclone) send `X-GUploader-No-308: yes` on every chunk and take a 308 for an error.
    @Test("X-GUploader-No-308: 200 with X-Http-Status-Code-Override: 308 while incomplete")
    func no308() throws {
        let session = try startResumable("go.bin")
        let data = pattern(3 << 18, seed: 5)
        let chunk = 1 << 18
        let go: HTTPHeaders = ["X-GUploader-No-308": "yes", "Content-Type": "text/plain"]
        for start in stride(from: 0, to: data.count, by: chunk) {
            var headers = go
            let last = start + chunk == data.count
            headers.set("Content-Range", "bytes \(start)-\(start + chunk - 1)/" + (last ? "\(data.count)" : "*"))
            let r = try client.send(
                method: "POST", target: session, headers: headers, body: Array(data[start..<start + chunk]))
            if last {
                #expect(r.status == 200 && r.headers["X-Http-Status-Code-Override"] == nil)
                #expect(try r.string("size") == String(data.count))
            } else {
                #expect(r.status == 200, "\(r.text.prefix(200))")
                #expect(r.headers["X-Http-Status-Code-Override"] == "308")
                #expect(r.headers["Range"] == "bytes=0-\(start + chunk - 1)")
            }
        }
        #expect(try media("go.bin") == data)

        // A status query asks the same way; without the header the answer is the plain 308.
        let other = try startResumable("other.bin")
        var query = go
        query.set("Content-Range", "bytes */*")
        let asked = try client.send(method: "PUT", target: other, headers: query)
        #expect(asked.status == 200 && asked.headers["X-Http-Status-Code-Override"] == "308")
        #expect(asked.headers["Range"] == nil)
        let plain = try client.send(method: "PUT", target: other, headers: ["Content-Range": "bytes */*"])
        #expect(plain.status == 308 && plain.headers["X-Http-Status-Code-Override"] == nil)
    }

    /// rclone's `mkdir` probes with a one-item listing and creates the bucket only on 404.
    @Test("listing a bucket that does not exist is 404, as GCS answers rclone's probe")
    func listMissingBucket() throws {
        let missing = try client.get("/storage/v1/b/never-made/o?maxResults=1")
        #expect(missing.status == 404 && missing.errorCode == 404)
        let made = try client.send(
            method: "POST", target: "/storage/v1/b?project=demo", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"name":"never-made"}"#))
        #expect(made.status == 200)
        let listed = try client.get("/storage/v1/b/never-made/o?maxResults=1")
        #expect(listed.status == 200)
        #expect(try listed.json()["items"] == nil)
    }

    /// Google's Go libraries encode a nil object as `null`: rclone's server-side copy and moveto rewrite with it.
    @Test("a JSON body of null on copy, rewrite and compose means no metadata changes")
    func nullBodies() throws {
        let data = pattern(5_000, seed: 9)
        let upload = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucketName)/o?uploadType=media&name=src",
            headers: ["Content-Type": "text/csv"], body: data)
        #expect(upload.status == 200)
        let json: HTTPHeaders = ["Content-Type": "application/json"]
        for verb in ["copyTo", "rewriteTo"] {
            let r = try client.send(
                method: "POST", target: objectURL("src") + "/\(verb)/b/\(bucketName)/o/\(verb)", headers: json,
                body: bytes("null\n"))
            #expect(r.status == 200, "\(verb): \(r.text.prefix(300))")
            #expect(try media(verb) == data)
            #expect(try client.get(objectURL(verb)).string("contentType") == "text/csv")
        }
        let composed = try client.send(
            method: "POST", target: objectURL("joined") + "/compose", headers: json,
            body: bytes(#"{"sourceObjects":[{"name":"src"},{"name":"src"}],"destination":null}"#))
        #expect(composed.status == 200, "\(composed.text.prefix(300))")
        #expect(try media("joined") == data + data)
        // Still only an object or null: anything else is a client bug.
        for body in ["[]", "\"x\"", "1"] {
            let r = try client.send(
                method: "POST", target: objectURL("src") + "/copyTo/b/\(bucketName)/o/bad", headers: json,
                body: bytes(body))
            #expect(r.status == 400, "\(body)")
        }
    }
}
