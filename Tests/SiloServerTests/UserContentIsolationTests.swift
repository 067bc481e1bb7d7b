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

/// Every answer that carries user bytes — and every other answer of the APIs — is sandboxed: a browser that opens
/// it as a document gives it an opaque origin and runs none of its scripts, so an uploaded page can read nothing of
/// the console that shares the origin (docs/threat-model.md, "User content and the console's origin"). The
/// browser's side of it is tests/console/test_console_user_content.py.
@Suite struct UserContentIsolationTests {
    static let page = "<!doctype html><script>document.title = sessionStorage.getItem('silo.console.adminKey')</script>"
    static let svg =
        #"<svg xmlns="http://www.w3.org/2000/svg" onload="fetch('/x', {headers: {a: sessionStorage.length}})"/>"#

    /// `Content-Security-Policy: sandbox` with no flag that gives back scripts, the origin, forms, windows or
    /// navigation of the page around it, and nosniff.
    static func expectIsolated(
        _ response: TestResponse, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        expectIsolated(response.headers, what, sourceLocation: sourceLocation)
    }

    static func expectIsolated(
        _ headers: HTTPHeaders, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let policies = headers.values("Content-Security-Policy")
        var sandboxes: [[String]] = []
        for policy in policies {
            for directive in policy.split(separator: ";") {
                let words = directive.split(separator: " ").map(String.init)
                if words.first == "sandbox" { sandboxes.append(words) }
            }
        }
        #expect(sandboxes.count == 1, "\(what): no sandbox in \(policies)", sourceLocation: sourceLocation)
        let flags = Set(sandboxes.first.map { Array($0.dropFirst()) } ?? [])
        let forbidden: Set<String> = [
            "allow-scripts", "allow-same-origin", "allow-forms", "allow-popups", "allow-top-navigation",
            "allow-popups-to-escape-sandbox", "allow-top-navigation-by-user-activation",
            "allow-storage-access-by-user-activation",
        ]
        #expect(flags.isDisjoint(with: forbidden), "\(what): \(policies)", sourceLocation: sourceLocation)
        #expect(
            headers.values("X-Content-Type-Options") == ["nosniff"], "\(what)", sourceLocation: sourceLocation)
    }

    /// A secured server (an admin key, a user with an ID token, `public/` readable by anyone) holding an HTML page
    /// and an SVG uploaded by that user through the v0 API, as the issue's attacker did.
    struct Uploads {
        static let adminKey = "user-content-isolation-admin-key"
        let server: TestServer
        let client: HTTPTestClient
        var admin: HTTPHeaders { ["Authorization": "Bearer \(Self.adminKey)"] }
        /// The v0 download URLs (with a token) of `public/report.html` and `public/image.svg`.
        var pageURL = ""
        var svgURL = ""

        init(_ transport: TestServer.Transport = .socket, caching: Bool = false) throws {
            var verifier = TokenVerifier.Configuration()
            verifier.adminKeys = try AdminKeys(keys: [Self.adminKey])
            let metadata: any MetadataStore =
                caching ? CachingMetadataStore(InMemoryMetadataStore()) : InMemoryMetadataStore()
            server = try TestServer(
                transport, metadata: metadata, blobs: InMemoryBlobStore(), policy: VectorPolicy(),
                credentials: TokenVerifier(verifier))
            client = server.client()
            #expect(
                try client.send(
                    method: "POST", target: "/storage/v1/b?project=p", headers: admin,
                    body: bytes(#"{"name":"\#(bucket)"}"#)
                ).status == 200)
            pageURL = try upload("public/report.html", UserContentIsolationTests.page, type: "text/html")
            svgURL = try upload("public/image.svg", UserContentIsolationTests.svg, type: "image/svg+xml")
        }

        /// Uploads as the admin (the policy under test is the answer's, not the upload's) and returns the v0
        /// download URL with the token the reply hands out.
        @discardableResult
        func upload(_ name: String, _ body: String, type: String) throws -> String {
            var headers = admin
            headers.set("Content-Type", type)
            let reply = try client.mediaUpload(name, bytes(body), headers: headers)
            #expect(reply.status == 200, "\(reply.text)")
            let token = try #require(try reply.string("downloadTokens"))
            return objectPath(name) + "?alt=media&token=" + token
        }

        func get(_ target: String, method: String = "GET", headers: HTTPHeaders = [:]) throws -> TestResponse {
            try client.send(method: method, target: target, headers: headers)
        }
    }

    @Test("v0 media downloads: by token, by credential, HEAD, ranges, 304, and again from the caches")
    func v0Downloads() throws {
        let s = try Uploads()
        for _ in 0..<2 {
            let page = try s.get(s.pageURL)
            #expect(page.status == 200 && page.headers["Content-Type"] == "text/html")
            Self.expectIsolated(page, "v0 token download of an HTML page")
            let svg = try s.get(s.svgURL)
            #expect(svg.status == 200 && svg.headers["Content-Type"] == "image/svg+xml")
            Self.expectIsolated(svg, "v0 token download of an SVG")
            Self.expectIsolated(
                try s.get(objectPath("public/report.html") + "?alt=media", headers: s.admin), "v0 admin download")
            Self.expectIsolated(try s.get(objectPath("public/report.html") + "?alt=media"), "v0 public download")
            Self.expectIsolated(try s.get(s.pageURL, method: "HEAD"), "v0 HEAD")
            let range = try s.get(s.pageURL, headers: ["Range": "bytes=0-9"])
            #expect(range.status == 206)
            Self.expectIsolated(range, "v0 range")
            let etag = try #require(page.headers["ETag"])
            let unchanged = try s.get(s.pageURL, headers: ["If-None-Match": etag])
            #expect(unchanged.status == 304)
            Self.expectIsolated(unchanged, "v0 304")
        }
    }

    @Test("JSON API media (alt=media and /download/storage/v1) and the JSON answers themselves")
    func jsonAPI() throws {
        let s = try Uploads()
        let name = PercentCoding.encodeComponent("public/report.html")
        for target in [
            "/storage/v1/b/\(bucket)/o/\(name)?alt=media", "/download/storage/v1/b/\(bucket)/o/\(name)?alt=media",
        ] {
            let media = try s.get(target, headers: s.admin)
            #expect(media.status == 200 && media.text == Self.page, "\(target)")
            #expect(media.headers["Content-Type"] == "text/html")
            Self.expectIsolated(media, target)
            Self.expectIsolated(try s.get(target, method: "HEAD", headers: s.admin), "HEAD \(target)")
        }
        Self.expectIsolated(try s.get("/storage/v1/b/\(bucket)/o/\(name)", headers: s.admin), "JSON metadata")
        Self.expectIsolated(try s.get("/storage/v1/b/\(bucket)/o", headers: s.admin), "JSON listing")
        Self.expectIsolated(try s.get("/storage/v1/b/\(bucket)/o/missing", headers: s.admin), "JSON 404")
        Self.expectIsolated(try s.get(objectPath("public/report.html")), "v0 metadata")
        Self.expectIsolated(try s.get(objectPath("testing/secret")), "v0 403")
        Self.expectIsolated(try s.get("/"), "the probe")
        Self.expectIsolated(try s.get("/openapi.json"), "the OpenAPI document")
    }

    @Test("XML API: path and virtual-host style, and response-content-type=text/html on a text object")
    func xmlAPI() throws {
        let s = try Uploads()
        try s.upload("public/note.txt", Self.page, type: "text/plain")
        for (target, host) in [
            ("/\(bucket)/public/report.html", "127.0.0.1"), ("/public/report.html", "\(bucket).localhost"),
        ] {
            let media = try s.get(target, headers: ["Host": host, "Authorization": "Bearer \(Uploads.adminKey)"])
            #expect(media.status == 200 && media.headers["Content-Type"] == "text/html", "\(target) \(media.text)")
            Self.expectIsolated(media, "XML GET \(host)\(target)")
        }
        // Any readable object becomes a page of the origin by asking for it as one: it stays sandboxed.
        let overridden = try s.get(
            "/\(bucket)/public/note.txt?response-content-type=text%2Fhtml", headers: s.admin)
        #expect(overridden.status == 200 && overridden.headers["Content-Type"] == "text/html", "\(overridden.text)")
        Self.expectIsolated(overridden, "XML response-content-type=text/html")
        Self.expectIsolated(try s.get("/\(bucket)?prefix=public/", headers: s.admin), "XML listing")
        Self.expectIsolated(try s.get("/\(bucket)/missing", headers: s.admin), "XML 404")
    }

    @Test("a V4 signed URL's download, with response-content-type=text/html")
    func signedURL() throws {
        let s = try SecuredServer()
        try s.put("page.html", Self.page)
        try s.bind([("roles/storage.objectViewer", ["serviceAccount:\(SecuredServer.reader.email)"])])
        let url = try SecuredServer.reader.signedURL(
            method: "GET", path: "/\(s.bucketName)/page.html", host: "storage.googleapis.com", headers: [],
            query: [("response-content-type", "text/html")], date: .now(), expires: 900)
        let response = try s.send("GET", url)
        #expect(response.status == 200 && response.headers["Content-Type"] == "text/html", "\(response.text)")
        Self.expectIsolated(response, "signed URL")
    }

    @Test("an answer made on the event loop carries the same fields, still formatted once")
    func inlineAnswers() throws {
        let s = try Uploads(caching: true)
        // The first read goes through a worker and fills the caches; the next is answered on the caller's thread.
        #expect(try s.get(objectPath("public/report.html") + "?alt=media").status == 200)
        let head = HTTPRequestHead(
            method: "GET", target: objectPath("public/report.html") + "?alt=media",
            headers: ["Host": "127.0.0.1:\(s.server.port)"])
        guard case .answered(.respond(let response)) = s.server.app.makeInlineAnswerer()!.beginInline(head) else {
            Issue.record("the read was not answered inline")
            return
        }
        Self.expectIsolated(response.headers, "inline answer")
        #expect(response.headers.wireFormat != nil, "the fields were added on the way out, not formatted once")
    }

    @Test("the console's page trusts only its own nonce, never the origin's uploads; its API is sandboxed")
    func consolePage() throws {
        let s = try Uploads()
        let first = try s.get("/console/")
        let second = try s.get("/console/")
        #expect(first.status == 200 && second.status == 200)
        let policy = try #require(first.headers["Content-Security-Policy"])
        #expect(!policy.contains("sandbox"))
        let script = try #require(
            policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.first {
                $0.hasPrefix("script-src ")
            })
        // Uploaded scripts are served by this origin: a policy that names it ('self', or its host) runs them.
        #expect(!script.contains("'self'") && !script.contains("127.0.0.1") && !script.contains("*"), "\(script)")
        let nonce = try #require(script.split(separator: " ").last.map { String($0.dropFirst(7).dropLast()) })
        #expect(nonce.count >= 22 && script == "script-src 'nonce-\(nonce)'", "\(script)")
        #expect(policy.contains("style-src 'nonce-\(nonce)'"))
        #expect(first.text.contains(#"<script type="module" src="app.js" nonce="\#(nonce)"></script>"#))
        #expect(first.text.contains(#"href="console.css" nonce="\#(nonce)""#))
        #expect(!first.text.contains("{{NONCE}}"))
        #expect(second.headers["Content-Security-Policy"] != policy, "each answer has a nonce of its own")
        #expect(first.headers["Cache-Control"] == "no-store" && first.headers["ETag"] == nil)
        let session = try s.get("/console/api/session", headers: s.admin)
        #expect(session.status == 200)
        Self.expectIsolated(session, "the console's API")
        Self.expectIsolated(try s.get("/console/nothing-here.js"), "a console 404")
    }
}

/// The check every answer passes (``ContentIsolation/ensure(_:)``), on the header lists it meets: its shortcut for
/// preformatted headers that begin with both fields must never pass a list that lacks one.
@Suite struct ContentIsolationEnsureTests {
    func ensured(_ headers: HTTPHeaders) -> HTTPHeaders {
        var headers = headers
        ContentIsolation.ensure(&headers)
        return headers
    }

    @Test func preformattedHeadersThatBeginWithBothAreLeftWithTheirBytes() {
        var headers = HTTPHeaders()
        ContentIsolation.add(to: &headers)
        headers.add("ETag", "\"x\"")
        let preformatted = headers.preformatted()
        let after = ensured(preformatted)
        #expect(after.wireFormat == preformatted.wireFormat && after.wireFormat != nil)
        #expect(after["Content-Security-Policy"] == "sandbox allow-downloads allow-modals")
    }

    @Test func everyOtherListGetsBothFieldsWithTheirValues() {
        var late: HTTPHeaders = ["ETag": "\"x\""]
        ContentIsolation.add(to: &late)
        var weaker: HTTPHeaders = [
            "Content-Security-Policy": "sandbox allow-scripts", "X-Content-Type-Options": "nosniff",
        ]
        weaker.add("ETag", "\"x\"")
        let lists: [HTTPHeaders] = [
            HTTPHeaders(), ["ETag": "\"x\""], (["ETag": "\"x\""] as HTTPHeaders).preformatted(), late.preformatted(),
            weaker.preformatted(), (["X-Content-Type-Options": "nosniff"] as HTTPHeaders).preformatted(),
        ]
        for list in lists {
            let after = ensured(list)
            #expect(after["Content-Security-Policy"] == "sandbox allow-downloads allow-modals", "\(list.fields)")
            #expect(after["X-Content-Type-Options"] == "nosniff", "\(list.fields)")
        }
    }
}
