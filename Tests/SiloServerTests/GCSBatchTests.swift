import Foundation
import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// `POST /batch/storage/v1` on a live server: calls run in order through the router, each answered in its own part.
@Suite struct GCSBatchTests {
    /// One call: its `Content-ID` (nil for none) and the embedded request as text, lines separated by `\n`.
    struct Call {
        var id: String?
        var request: String
        init(_ id: String?, _ request: String) {
            self.id = id
            self.request = request
        }
    }

    /// One answered part, read back without the server's parser.
    struct Answer {
        var contentID: String?
        var status: Int
        var headers: HTTPHeaders
        var body: String
        func json() throws -> JSONObject { try #require(JSONValue.parse(Array(body.utf8)).objectValue) }
    }

    static let boundary = "===============7330845974216740156=="

    static func body(_ calls: [Call], newline: String) -> [UInt8] {
        var text = "preamble, ignored" + newline
        for call in calls {
            text += "--\(boundary)\(newline)Content-Type: application/http\(newline)"
            if let id = call.id { text += "Content-ID: <\(id)>\(newline)" }
            text +=
                newline
                + call.request.split(separator: "\n", omittingEmptySubsequences: false)
                .joined(separator: newline) + newline
        }
        return Array((text + "--\(boundary)--\(newline)epilogue, ignored").utf8)
    }

    static func send(
        _ client: HTTPTestClient, _ calls: [Call], newline: String = "\r\n", path: String = "/batch/storage/v1",
        headers extra: HTTPHeaders = [:]
    ) throws -> TestResponse {
        var headers = extra
        headers.set("Content-Type", "multipart/mixed; boundary=\"\(boundary)\"")
        return try client.send(method: "POST", target: path, headers: headers, body: body(calls, newline: newline))
    }

    /// Splits a batch answer on the boundary its Content-Type names (unquoted, as gcsfs needs).
    static func answers(_ response: TestResponse) throws -> [Answer] {
        #expect(response.status == 200)
        let contentType = try #require(response.headers["Content-Type"])
        #expect(contentType.hasPrefix("multipart/mixed; boundary=batch_"))
        let boundary = String(contentType.split(separator: "=", maxSplits: 1)[1])
        #expect(!boundary.contains("\"") && !boundary.contains(";"))
        let pieces = response.text.components(separatedBy: "--" + boundary)
        #expect(pieces.last?.hasPrefix("--") == true)
        return try pieces.dropFirst().dropLast().map { piece in
            var text = Substring(piece)
            #expect(text.hasPrefix("\r\n") && text.hasSuffix("\r\n"))
            // By bytes: "\r\n" is one Character.
            text = Substring(text.utf8.dropFirst(2).dropLast(2))
            let (partHead, http) = try split(text)
            var partHeaders = HTTPHeaders()
            for line in partHead.components(separatedBy: "\r\n") {
                let colon = try #require(line.firstIndex(of: ":"))
                partHeaders.add(String(line[..<colon]), line[line.index(after: colon)...].trimmingSpaces())
            }
            #expect(partHeaders["Content-Type"] == "application/http")
            let (innerHead, body) = try split(Substring(http))
            var lines = innerHead.components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
            #expect(statusLine.count == 3 && statusLine[0] == "HTTP/1.1")
            var headers = HTTPHeaders()
            for line in lines {
                let colon = try #require(line.firstIndex(of: ":"))
                headers.add(String(line[..<colon]), line[line.index(after: colon)...].trimmingSpaces())
            }
            #expect(headers["Content-Length"] == String(body.utf8.count))
            return Answer(
                contentID: partHeaders["Content-ID"], status: try #require(Int(statusLine[1])), headers: headers,
                body: body)
        }
    }

    private static func split(_ text: Substring) throws -> (String, String) {
        let range = try #require(text.range(of: "\r\n\r\n"))
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    static func gcs(_ name: String) -> String { "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name) }

    @Test("deletes, patches and gets: mixed results in order, Content-ID echoed", arguments: ["\r\n", "\n"])
    func mixedResults(newline: String) throws {
        let server = try TestServer()
        let client = server.client()
        for name in ["a.txt", "b.txt", "c d/e.txt"] { try client.mediaUpload(name, bytes(name)) }
        let patch = #"{"metadata":{"color":"blue"},"contentType":"text/x-batch"}"#
        let calls = [
            Call("id+1", "DELETE \(Self.gcs("a.txt")) HTTP/1.1"),
            Call("id+2", "DELETE \(Self.gcs("missing.txt")) HTTP/1.1\nContent-Length: 0\n"),
            Call(
                "id+3",
                "PATCH \(Self.gcs("b.txt"))?projection=full HTTP/1.1\nContent-Type: application/json\n"
                    + "Content-Length: \(patch.utf8.count)\n\n\(patch)"),
            Call("id+4", "DELETE \(Self.gcs("c d/e.txt"))?ifGenerationMatch=1 HTTP/1.1\n"),
            // Absolute form, as google-cloud-storage sends it; runs after the PATCH.
            Call(nil, "GET http://127.0.0.1:\(server.port)\(Self.gcs("b.txt")) HTTP/1.1\nAccept: application/json\n\n"),
            Call("id+6", "GET \(Self.gcs("a.txt")) HTTP/1.1"),
        ]
        let answers = try Self.answers(try Self.send(client, calls, newline: newline))
        #expect(answers.map(\.status) == [204, 404, 200, 412, 200, 404])
        #expect(
            answers.map(\.contentID) == [
                "<response-id+1>", "<response-id+2>", "<response-id+3>", "<response-id+4>",
                nil, "<response-id+6>",
            ])
        #expect(try answers[1].json()["error"]?.objectValue?["code"]?.int64Value == 404)
        #expect(answers[1].body.contains("No such object"))
        let patched = try answers[2].json()
        #expect(patched["metadata"]?.objectValue?["color"]?.stringValue == "blue")
        #expect(patched["metageneration"]?.stringValue == "2")
        #expect(answers[2].headers["Content-Type"]?.hasPrefix("application/json") == true)
        #expect(
            try answers[3].json()["error"]?.objectValue?["errors"]?.arrayValue?.first?.objectValue?["reason"]?
                .stringValue == "conditionNotMet")
        let got = try answers[4].json()
        #expect(got["contentType"]?.stringValue == "text/x-batch" && got["metageneration"]?.stringValue == "2")
        #expect(got["mediaLink"]?.stringValue?.hasPrefix("http://127.0.0.1:\(server.port)/") == true)
        // The calls took effect as answered.
        #expect(try client.get(Self.gcs("a.txt")).status == 404)
        #expect(try client.get(Self.gcs("c d/e.txt")).status == 200)
    }

    @Test("each call's fields= selects its own answer; a refused selector refuses its call alone")
    func partialResponses() throws {
        let server = try TestServer()
        let client = server.client()
        try client.mediaUpload("p.txt", bytes("p"))
        let patch = #"{"contentType":"text/x-selected"}"#
        let calls = [
            Call("1", "GET \(Self.gcs("p.txt"))?fields=name,size HTTP/1.1"),
            Call(
                "2",
                "PATCH \(Self.gcs("p.txt"))?fields=contentType HTTP/1.1\nContent-Type: application/json\n"
                    + "Content-Length: \(patch.utf8.count)\n\n\(patch)"),
            Call("3", "GET \(Self.gcs("p.txt"))?fields=nmae HTTP/1.1"),
        ]
        let answers = try Self.answers(Self.send(client, calls))
        #expect(answers.map(\.status) == [200, 200, 400])
        #expect(try answers[0].json().keys == ["name", "size"])
        #expect(try answers[1].json() == ["contentType": .string("text/x-selected")])
    }

    @Test("100 calls run; 101 refuse the whole batch with GCS's error shape and run none")
    func callLimit() throws {
        let server = try TestServer()
        let client = server.client()
        try client.mediaUpload("victim.txt", bytes("v"))
        let deletes = (0..<101).map { i in Call("\(i)", "DELETE \(Self.gcs(i == 0 ? "victim.txt" : "n\(i)")) HTTP/1.1")
        }
        let refused = try Self.send(client, deletes)
        #expect(refused.status == 400)
        let error = try #require(try refused.json()["error"]?.objectValue)
        #expect(error["code"]?.int64Value == 400)
        #expect(error["errors"]?.arrayValue?.first?.objectValue?["reason"]?.stringValue == "invalid")
        #expect(try client.get(Self.gcs("victim.txt")).status == 200)
        let answers = try Self.answers(try Self.send(client, Array(deletes.prefix(100))))
        #expect(answers.count == 100)
        #expect(answers.first?.status == 204 && answers.dropFirst().allSatisfy { $0.status == 404 })
        #expect(answers.map(\.contentID) == (0..<100).map { "<response-\($0)>" })
    }

    @Test("a malformed or unbatchable call answers 400 in its part; the others run")
    func badCalls() throws {
        let server = try TestServer()
        let client = server.client()
        try client.mediaUpload("x.txt", bytes("x"))
        let calls = [
            Call("bad-line", "GARBAGE"),
            Call("no-version-but-three", "GET  /storage/v1/b HTTP/2.0"),
            Call("folded", "GET \(Self.gcs("x.txt")) HTTP/1.1\nX-A: 1\n continued\n"),
            Call("cr-in-value", "GET \(Self.gcs("x.txt")) HTTP/1.1\nX-A: 1\rInjected: yes\n"),
            Call("media", "GET \(Self.gcs("x.txt"))?alt=media HTTP/1.1"),
            Call("download", "GET /download\(Self.gcs("x.txt")) HTTP/1.1"),
            Call("upload", "POST /upload/storage/v1/b/\(bucket)/o?uploadType=media&name=u HTTP/1.1\n\nbytes"),
            Call("insert", "POST /storage/v1/b/\(bucket)/o?name=u HTTP/1.1\n\nbytes"),
            Call("v0", "DELETE \(objectPath("x.txt")) HTTP/1.1"),
            Call("nested", "POST /batch/storage/v1 HTTP/1.1"),
            Call("short-body", "PATCH \(Self.gcs("x.txt")) HTTP/1.1\nContent-Length: 99\n\n{}"),
            // Text that only starts like a delimiter is the part's: this body is "{}", a line end, and more.
            Call("false-delimiter", "PATCH \(Self.gcs("x.txt")) HTTP/1.1\n\n{}\n--\(Self.boundary)X\n"),
            Call("chunked", "PATCH \(Self.gcs("x.txt")) HTTP/1.1\nTransfer-Encoding: chunked\n\n2\n{}\n0\n"),
            Call("good", "DELETE \(Self.gcs("x.txt")) HTTP/1.1"),
        ]
        let answers = try Self.answers(try Self.send(client, calls))
        #expect(answers.count == calls.count)
        #expect(answers.dropLast().allSatisfy { $0.status == 400 }, "\(answers.map(\.status))")
        #expect(answers.last?.status == 204)
        #expect(answers.map(\.contentID) == calls.map { "<response-\($0.id!)>" })
        for answer in answers.dropLast() {
            #expect(try answer.json()["error"]?.objectValue?["code"]?.int64Value == 400)
            #expect(answer.headers["Injected"] == nil)
        }
        #expect(try client.get(objectPath("u")).status == 404)
        #expect(try client.get(Self.gcs("x.txt")).status == 404)
    }

    @Test("a Content-ID with a control character is not echoed; its call answers 400")
    func contentIDInjection() throws {
        let server = try TestServer()
        let client = server.client()
        var body = Self.body([Call("ok", "GET /storage/v1/b HTTP/1.1")], newline: "\n")
        let bad =
            "--\(Self.boundary)\nContent-Type: application/http\nContent-ID: <a\rX-Injected: 1>\n\nGET /storage/v1/b HTTP/1.1\n"
        body.insert(contentsOf: Array(bad.utf8), at: Array("preamble, ignored\n".utf8).count)
        let response = try client.send(
            method: "POST", target: "/batch",
            headers: ["Content-Type": "multipart/mixed; boundary=\(Self.boundary)"], body: body)
        let answers = try Self.answers(response)
        #expect(answers.map(\.status) == [400, 200])
        #expect(answers.map(\.contentID) == [nil, "<response-ok>"])
        #expect(!response.text.contains("X-Injected"))
    }

    @Test("the batch itself: POST only, multipart/mixed only, bounded body, three paths")
    func batchRequestItself() throws {
        var configuration = ServerConfiguration()
        configuration.maxBatchBodyBytes = 4096
        let server = try TestServer(configuration: configuration)
        let client = server.client()
        #expect(try client.get("/batch/storage/v1").status == 400)
        let json = try client.send(
            method: "POST", target: "/batch/storage/v1", headers: ["Content-Type": "application/json"],
            body: bytes("{}"))
        #expect(json.status == 400)
        #expect(try client.send(method: "POST", target: "/batch/storage/v1/b", body: []).status == 404)
        let list = Call("l", "GET /storage/v1/b/\(bucket)/o HTTP/1.1")
        try client.mediaUpload("listed.txt", bytes("l"))
        for path in ["/batch", "/batch/storage/v1", "/batch/storage/v1/"] {
            let answers = try Self.answers(try Self.send(client, [list], path: path))
            #expect(answers.map(\.status) == [200])
            #expect(answers.first?.body.contains("listed.txt") == true)
        }
        let big = Call("big", "PATCH \(Self.gcs("listed.txt")) HTTP/1.1\n\n" + String(repeating: " ", count: 5000))
        let tooLarge = try Self.send(client, [big])
        #expect(tooLarge.status == 413)
        #expect(try tooLarge.json()["error"]?.objectValue?["code"]?.int64Value == 413)
        let empty = try client.send(
            method: "POST", target: "/batch/storage/v1",
            headers: ["Content-Type": "multipart/mixed; boundary=\(Self.boundary)"], body: bytes("--\(Self.boundary)--")
        )
        #expect(empty.status == 400)
    }

    static let adminKey = "batch-test-admin-key-0123456789"
    static let secret = "a batch test HS256 secret of at least 32 bytes"

    @Test("auth per call: each call's own Authorization, else the batch's")
    func authPerCall() throws {
        var verifier = TokenVerifier.Configuration()
        verifier.adminKeys = try AdminKeys(keys: [Self.adminKey])
        verifier.selfIssued = try SelfIssuedTokens(secret: Array(Self.secret.utf8), audience: "demo")
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let server = try TestServer(configuration: configuration, credentials: TokenVerifier(verifier))
        let client = server.client()
        let admin = "Authorization: Bearer \(Self.adminKey)"
        let user = try SelfIssuedTokens(secret: Array(Self.secret.utf8), audience: "demo").mint(uid: "u1")
        let created = try client.send(
            method: "POST", target: "/storage/v1/b", headers: ["Authorization": "Bearer \(Self.adminKey)"],
            body: bytes(#"{"name":"secured"}"#))
        #expect(created.status == 200)
        let get = "GET /storage/v1/b/secured HTTP/1.1"
        let calls = [
            Call("inherits", get),
            Call("own-admin", "\(get)\n\(admin)"),
            Call("own-user", "\(get)\nAuthorization: Bearer \(user)"),
            Call("own-bad", "\(get)\nAuthorization: Bearer not-a-token"),
        ]
        let asAdmin = try Self.answers(
            try Self.send(client, calls, headers: ["Authorization": "Bearer \(Self.adminKey)"]))
        #expect(asAdmin.map(\.status) == [200, 200, 403, 401])
        let anonymous = try Self.answers(try Self.send(client, calls))
        #expect(anonymous.map(\.status) == [401, 200, 403, 401])
        let asUser = try Self.answers(try Self.send(client, calls, headers: ["Authorization": "Bearer \(user)"]))
        #expect(asUser.map(\.status) == [403, 200, 403, 401])
        // A batch whose own credential is refused is refused whole, as any request would be.
        let refused = try Self.send(client, calls, headers: ["Authorization": "Bearer not-a-token"])
        #expect(refused.status == 401)
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
