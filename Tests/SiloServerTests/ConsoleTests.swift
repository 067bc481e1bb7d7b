import Foundation
import SiloAuth
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

/// `/console/`: the files of console/ served byte for byte from the binary (embedded at build time), with their
/// content types, a strict Content-Security-Policy, nosniff and revalidating cache headers.
@Suite struct ConsoleTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("console")

    static func filesOnDisk() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { [".html", ".css", ".js", ".svg"].contains(where: $0.hasSuffix) }.sorted()
    }

    @Test func servesEveryFileByteForByte() throws {
        let server = try TestServer()
        let client = server.client()
        let names = try Self.filesOnDisk()
        #expect(names.contains("index.html"))
        #expect(Set(names) == Set(ConsoleAssets.files.keys), "the embedded console files are not console/'s")
        for name in names {
            let response = try client.get("/console/\(name)")
            #expect(response.status == 200, "\(name)")
            var onDisk = [UInt8](try Data(contentsOf: Self.directory.appendingPathComponent(name)))
            if name == ConsoleRoutes.pageName {
                // The page is the file with its nonce placeholder replaced by the nonce its policy names.
                let policy = try #require(response.headers["Content-Security-Policy"])
                let nonce = try #require(policy.split(separator: "'").first { $0.hasPrefix("nonce-") }?.dropFirst(6))
                let text = String(decoding: onDisk, as: UTF8.self)
                #expect(text.contains(ConsoleRoutes.noncePlaceholder))
                onDisk = Array(text.replacingOccurrences(of: ConsoleRoutes.noncePlaceholder, with: nonce).utf8)
            }
            // Compared outside #expect, which would print both files byte by byte.
            let same = response.body == onDisk
            #expect(same, "console/\(name) is not what is served")
            let expectedType =
                name.hasSuffix(".html")
                ? "text/html; charset=utf-8"
                : name.hasSuffix(".css")
                    ? "text/css; charset=utf-8"
                    : name.hasSuffix(".js") ? "text/javascript; charset=utf-8" : "image/svg+xml"
            #expect(response.headers["Content-Type"] == expectedType, "\(name)")
            #expect(response.headers["X-Content-Type-Options"] == "nosniff")
            if name == ConsoleRoutes.pageName {
                // Each answer of the page has a nonce of its own: nothing to keep or revalidate.
                #expect(response.headers["Cache-Control"] == "no-store")
                #expect(response.headers["ETag"] == nil)
            } else {
                #expect(response.headers["Cache-Control"] == "no-cache")
                #expect(response.headers["ETag"]?.hasPrefix("\"") == true)
            }
        }
    }

    @Test func theIndexCarriesAStrictPolicy() throws {
        let server = try TestServer()
        let response = try server.client().get("/console/")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
        let policy = try #require(response.headers["Content-Security-Policy"])
        #expect(policy.contains("default-src 'none'"))
        // Scripts by the answer's nonce, not by origin: uploads are served from the same origin (ContentIsolation).
        #expect(policy.contains("script-src 'nonce-"))
        #expect(!policy.contains("script-src 'self'") && !policy.contains("style-src 'self'"))
        #expect(policy.contains("frame-ancestors 'none'"))
        #expect(!policy.contains("unsafe-inline"))
        #expect(!policy.contains("unsafe-eval"))
        #expect(response.headers["X-Frame-Options"] == "DENY")
        #expect(response.headers["Referrer-Policy"] == "no-referrer")
        // The policy forbids inline script and style; the page must not need any.
        let html = response.text
        #expect(!html.contains("<script>"))
        #expect(!html.contains("style=\""))
        #expect(html.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil)
    }

    @Test func revalidationAnswers304() throws {
        let server = try TestServer()
        let client = server.client()
        let first = try client.get("/console/app.js")
        let etag = try #require(first.headers["ETag"])
        let again = try client.get("/console/app.js", headers: ["If-None-Match": etag])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        let other = try client.get("/console/app.js", headers: ["If-None-Match": "\"stale\""])
        #expect(other.status == 200)
    }

    @Test func pathsAndMethods() throws {
        let server = try TestServer()
        let client = server.client()
        let bare = try client.get("/console")
        #expect(bare.status == 301)
        #expect(bare.headers["Location"] == "/console/")
        #expect(try client.get("/console/nothing.js").status == 404)
        #expect(try client.get("/console/a/b").status == 404)
        #expect(try client.get("/console/..%2Fconsole.css").status == 404)
        let head = try client.send(method: "HEAD", target: "/console/console.css")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(try client.send(method: "PUT", target: "/console/index.html").status == 405)
        #expect(try routed("/console") == .console([]))
        #expect(try routed("/console/app.js") == .console(["app.js"]))
        #expect(try routed("/consoles") == .gcs(.xmlBucket(try BucketName("consoles"))))
    }

    @Test func sessionSaysWhetherAKeyIsNeeded() throws {
        let open = try TestServer()
        let info = try open.client().get("/console/api/session").json()
        #expect(info["admin"] == .bool(true))
        #expect(info["signInRequired"] == .bool(false))

        let key = "console-test-admin-key-0123456789"
        var verifier = TokenVerifier.Configuration()
        verifier.adminKeys = try AdminKeys(keys: [key])
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let secured = try TestServer(configuration: configuration, credentials: TokenVerifier(verifier))
        let client = secured.client()
        let anonymous = try client.get("/console/api/session").json()
        #expect(anonymous["admin"] == .bool(false))
        #expect(anonymous["signInRequired"] == .bool(true))
        let admin = try client.get("/console/api/session", headers: ["Authorization": "Bearer \(key)"]).json()
        #expect(admin["admin"] == .bool(true))
        let wrong = try client.get("/console/api/session", headers: ["Authorization": "Bearer not-the-key"])
        #expect(wrong.status == 401)
        #expect(try client.get("/console/api/rules").status == 403)
        #expect(try client.get("/console/api/nothing").status == 404)
    }
}
