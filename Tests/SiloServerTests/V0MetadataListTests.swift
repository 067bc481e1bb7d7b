import SiloCore
import SiloHTTP
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// v0 update, delete, list and tokens; headers, auth and CORS. Route semantics only (nothing here depends on the
/// wire), so in process (``TestServer/Transport/inProcess``); `InProcessHarnessTests` checks that the in-process
/// answers match the socket's.
@Suite struct V0MetadataListTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer(.inProcess, policy: VectorPolicy())
        client = server.client()
    }

    func patch(_ name: String, _ json: String, method: String = "PATCH", headers extra: HTTPHeaders = [:]) throws
        -> TestResponse
    {
        var headers: HTTPHeaders = ["Content-Type": "application/json; charset=utf-8"]
        for (k, v) in extra { headers.set(k, v) }
        return try client.send(method: method, target: objectPath(name), headers: headers, body: bytes(json))
    }

    func list(_ query: String, headers: HTTPHeaders = [:]) throws -> (
        prefixes: [String], items: [String], token: String?
    ) {
        let r = try client.get(bucketPath() + "?" + query, headers: headers)
        #expect(r.status == 200, "\(r.text)")
        let o = try r.json()
        let prefixes = try #require(o["prefixes"]?.arrayValue).compactMap(\.stringValue)
        let items = try #require(o["items"]?.arrayValue).map { item -> String in
            let obj = item.objectValue!
            #expect(obj.keys == ["name", "bucket"])
            return obj["name"]!.stringValue!
        }
        return (prefixes, items, o["nextPageToken"]?.stringValue)
    }

    @Test("8.3.26 PATCH applies values, bumps metageneration, changes etag")
    func patchValues() throws {
        let before = try client.multipartUpload("public/p.txt", metadata: #"{"name":"public/p.txt"}"#, bytes("p"))
            .json()
        let r = try patch(
            "public/p.txt", #"{"contentType":"application/awesome-stream","metadata":{"testable":"true"}}"#)
        #expect(r.status == 200)
        let after = try r.json()
        #expect(after["contentType"] == .string("application/awesome-stream"))
        #expect(after["metadata"] == .object(["testable": .string("true")]))
        #expect(after["metageneration"] == .string("2"))
        #expect(after["etag"] != before["etag"])
    }

    @Test("8.3.27 null deletes; contentEncoding reads identity")
    func patchNulls() throws {
        try client.multipartUpload(
            "public/n.txt",
            metadata:
                #"{"name":"public/n.txt","cacheControl":"max-age=60","contentLanguage":"en","contentEncoding":"identity","metadata":{"a":"1"}}"#,
            bytes("n"))
        let r = try patch(
            "public/n.txt",
            #"{"cacheControl":null,"contentDisposition":null,"contentEncoding":null,"contentLanguage":null,"contentType":null,"metadata":null}"#
        )
        let o = try r.json()
        for key in ["cacheControl", "contentDisposition", "contentLanguage", "contentType", "metadata"] {
            #expect(o[key] == nil, "\(key)")
        }
        #expect(o["contentEncoding"] == .string("identity"))
    }

    @Test("8.3.28 removing the only custom key drops metadata")
    func patchRemoveKey() throws {
        try client.multipartUpload(
            "public/k.txt", metadata: #"{"name":"public/k.txt","metadata":{"removeMe":"x"}}"#, bytes("k"))
        let o = try patch("public/k.txt", #"{"metadata":{"removeMe":null}}"#).json()
        #expect(o["metadata"] == nil)
    }

    @Test("8.3.29 PUT with X-HTTP-Method-Override: PATCH is an update, not an upload")
    func methodOverride() throws {
        try client.mediaUpload("public/ov.txt", bytes("keep me"))
        let r = try patch(
            "public/ov.txt", #"{"contentLanguage":"fr"}"#, method: "PUT", headers: ["X-HTTP-Method-Override": "PATCH"])
        #expect(r.status == 200)
        #expect(try r.string("contentLanguage") == "fr")
        #expect(try client.get(objectPath("public/ov.txt") + "?alt=media").text == "keep me")
    }

    @Test("8.3.30 read-only keys ignored; missing object 404")
    func patchReadOnly() throws {
        try client.mediaUpload("public/ro.txt", bytes("ro"))
        let r = try patch(
            "public/ro.txt",
            #"{"bucket":"","generation":"1","size":"99","timeCreated":"2000-01-01T00:00:00.000Z","name":"other","cacheControl":"no-cache"}"#
        )
        #expect(r.status == 200)
        let o = try r.json()
        #expect(o["size"] == .string("2"))
        #expect(o["name"] == .string("public/ro.txt"))
        #expect(try patch("public/nothing", #"{"cacheControl":"x"}"#).status == 404)
    }

    @Test("malformed JSON and wrong types are 400")
    func patchMalformed() throws {
        try client.mediaUpload("public/bad.txt", bytes("b"))
        #expect(try patch("public/bad.txt", "{not json").status == 400)
        #expect(try patch("public/bad.txt", #"{"contentType":5}"#).status == 400)
        #expect(try patch("public/bad.txt", #"[1,2]"#).status == 400)
        #expect(try client.get(objectPath("public/bad.txt")).json()["metageneration"] == .string("1"))
    }

    @Test("8.3.31 delete is 204 then 404")
    func delete() throws {
        try client.mediaUpload("public/d.txt", bytes("d"))
        #expect(try client.send(method: "DELETE", target: objectPath("public/d.txt")).status == 204)
        #expect(try client.send(method: "DELETE", target: objectPath("public/d.txt")).status == 404)
        #expect(try client.get(objectPath("public/d.txt")).status == 404)
    }

    @Test("DELETE /v0/b/{bucket}/o?name= deletes, as pyrebase4 and firebase-rest-api send it")
    func deleteByQueryName() throws {
        try client.mediaUpload("public/q d.txt", bytes("d"))
        let target = bucketPath() + "?name=" + PercentCoding.encodeComponent("public/q d.txt")
        #expect(try client.send(method: "DELETE", target: target).status == 204)
        #expect(try client.get(objectPath("public/q d.txt")).status == 404)
        #expect(try client.send(method: "DELETE", target: target).status == 404)
        #expect(try client.send(method: "DELETE", target: bucketPath()).status == 400, "no name: still refused")
    }

    @Test("8.3.32 list with prefix and delimiter")
    func listPrefixes() throws {
        for name in [
            "public/listAll/item1", "public/listAll/item2", "public/listAll/some/deeply/nested/directory/item1",
        ] {
            try client.mediaUpload(name, bytes("x"))
        }
        let page = try list("prefix=public%2FlistAll%2F&delimiter=%2F")
        #expect(page.items == ["public/listAll/item1", "public/listAll/item2"])
        #expect(page.prefixes == ["public/listAll/some/"])
        #expect(page.token == nil)
    }

    @Test("8.3.33 empty results, root listing, prefix without slash")
    func listEdges() throws {
        let empty = try list("prefix=public%2Fnothing%2F&delimiter=%2F")
        #expect(empty.items.isEmpty && empty.prefixes.isEmpty)
        try client.mediaUpload("public/r.txt", bytes("r"))
        // The root is not public under the vector policy: list it as the admin.
        let owner: HTTPHeaders = ["Authorization": "Bearer owner"]
        #expect(try list("prefix=&delimiter=%2F", headers: owner).prefixes == ["public/"])
        #expect(try list("delimiter=%2F", headers: owner).prefixes == ["public/"])
        #expect(try client.get(bucketPath() + "?delimiter=%2F").status == 403)
        #expect(try client.get(bucketPath() + "?prefix=public&delimiter=%2F").status == 400)
    }

    @Test("8.3.34 placeholders and invalid names are filtered")
    func listInvalidNames() throws {
        for name in ["public/listAll/abc/", "public/listAll//foo", "public/listAll/bar//", "public/listAll/baz//qux"] {
            #expect(try client.mediaUpload(name, bytes("x")).status == 200, "\(name)")
        }
        let page = try list("prefix=public%2FlistAll%2F&delimiter=%2F")
        #expect(page.prefixes == ["public/listAll/abc/", "public/listAll/bar/", "public/listAll/baz/"])
        #expect(page.items.isEmpty)
    }

    @Test("8.3.35 pagination 4, 4, 2")
    func pagination() throws {
        for i in 0..<10 { try client.mediaUpload("public/listAll/item#\(i)", bytes("\(i)")) }
        var names: [String] = []
        var token: String?
        var sizes: [Int] = []
        var tokens: [Bool] = []
        repeat {
            let page = try list(
                "prefix=public%2FlistAll%2F&delimiter=%2F&maxResults=4" + (token.map { "&pageToken=\($0)" } ?? ""))
            names += page.items
            sizes.append(page.items.count)
            tokens.append(page.token != nil)
            token = page.token
        } while token != nil
        #expect(sizes == [4, 4, 2])
        #expect(tokens == [true, true, false])
        #expect(names == (0..<10).map { "public/listAll/item#\($0)" })
    }

    @Test("8.3.36 prefixes are not repeated across pages")
    func mixedPagination() throws {
        for name in ["a/1", "b/1", "c/1", "d", "e", "f"] { try client.mediaUpload("public/mix/\(name)", bytes("x")) }
        var seen: [String] = []
        var token: String?
        repeat {
            let page = try list(
                "prefix=public%2Fmix%2F&delimiter=%2F&maxResults=2" + (token.map { "&pageToken=\($0)" } ?? ""))
            seen += page.prefixes + page.items
            #expect(page.prefixes.count + page.items.count <= 2)
            token = page.token
        } while token != nil
        #expect(
            seen.sorted() == [
                "public/mix/a/", "public/mix/b/", "public/mix/c/", "public/mix/d", "public/mix/e", "public/mix/f",
            ])
        #expect(Set(seen).count == seen.count)
    }

    @Test("maxResults bounds and bad page tokens are 400")
    func listBounds() throws {
        #expect(try client.get(bucketPath() + "?maxResults=0").status == 400)
        #expect(try client.get(bucketPath() + "?maxResults=1001").status == 400)
        #expect(try client.get(bucketPath() + "?prefix=public%2F&pageToken=%21%21").status == 400)
    }

    @Test("8.3.37 token management is admin-only")
    func tokens() throws {
        let owner: HTTPHeaders = ["Authorization": "Bearer owner"]
        let first = try client.mediaUpload("public/tok.txt", bytes("t")).json()["downloadTokens"]!.stringValue!
        let created = try client.send(
            method: "POST", target: objectPath("public/tok.txt") + "?create_token=true", headers: owner)
        #expect(created.status == 200)
        let both = try created.string("downloadTokens")!.split(separator: ",").map(String.init)
        #expect(both.count == 2 && both[0] == first)
        #expect(
            try client.send(method: "POST", target: objectPath("public/tok.txt") + "?create_token=true").status == 403)
        #expect(
            try client.send(method: "POST", target: objectPath("public/tok.txt") + "?create_token=yes", headers: owner)
                .status == 400)
        _ = try client.send(
            method: "POST", target: objectPath("public/tok.txt") + "?delete_token=\(both[0])", headers: owner)
        let last = try client.send(
            method: "POST", target: objectPath("public/tok.txt") + "?delete_token=\(both[1])", headers: owner)
        let remaining = try last.string("downloadTokens")!
        #expect(!remaining.isEmpty && !remaining.contains(",") && remaining != both[0] && remaining != both[1])
        #expect(
            try client.send(method: "POST", target: objectPath("public/none") + "?create_token=true", headers: owner)
                .status == 404)
    }

    @Test("8.4.39 emulator tokens are accepted; owner bypasses rules")
    func emulatorCredentials() throws {
        try client.mediaUpload("testing/x.txt", bytes("x"), headers: ["Authorization": "Bearer owner"])
        #expect(
            try client.get(
                objectPath("testing/x.txt"), headers: ["Authorization": "Firebase \(emulatorToken(uid: "u1"))"]
            ).status == 200)
        #expect(try client.get(objectPath("testing/x.txt"), headers: ["Authorization": "Firebase owner"]).status == 200)
        #expect(try client.get(objectPath("testing/x.txt")).status == 403)
        #expect(try client.get(objectPath("elsewhere/x.txt"), headers: ["Authorization": "Bearer owner"]).status == 404)
    }

    @Test("8.4.40 CORS preflight and exposed headers")
    func cors() throws {
        let preflight = try client.send(
            method: "OPTIONS", target: bucketPath() + "?name=x",
            headers: [
                "Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers":
                    "authorization,x-goog-upload-command,x-goog-upload-protocol,x-firebase-storage-version,x-firebase-appcheck,content-type",
            ])
        #expect(preflight.status == 204)
        #expect(preflight.headers["Access-Control-Allow-Origin"] == "http://localhost:5173")
        #expect(preflight.headers["Access-Control-Allow-Headers"]?.contains("x-goog-upload-command") == true)
        #expect(preflight.headers["Access-Control-Allow-Methods"]?.contains("POST") == true)
        let actual = try client.send(
            method: "POST", target: bucketPath() + "?name=public/cors.txt",
            headers: [
                "Origin": "http://localhost:5173", "X-Goog-Upload-Command": "start",
                "X-Goog-Upload-Protocol": "resumable",
            ])
        #expect(actual.headers["Access-Control-Allow-Origin"] == "http://localhost:5173")
        let exposed = actual.headers["Access-Control-Expose-Headers"]?.lowercased() ?? ""
        for header in ["x-goog-upload-status", "x-goog-upload-url", "x-goog-upload-size-received"] {
            #expect(exposed.contains(header))
        }
    }
}
