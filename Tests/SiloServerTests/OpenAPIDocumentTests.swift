import Foundation
import SiloCore
import SiloHTTP
import SiloServer
import SiloTestStores
import SiloTesting
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// `GET /openapi.json` serves docs/openapi.json exactly, so the document and what the binary serves cannot drift
/// (the build embeds the file: Plugins/EmbedFiles).
@Suite struct OpenAPIDocumentTests {
    static let documentURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi.json")

    @Test func servesTheFileByteForByte() throws {
        let server = try TestServer()
        let response = try server.client().send(method: "GET", target: "/openapi.json")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "application/json")
        let onDisk = [UInt8](try Data(contentsOf: Self.documentURL))
        #expect(response.body.count == onDisk.count)
        #expect(response.body == onDisk, "the served document is not docs/openapi.json")
    }

    @Test func headAnswersTheHeadersOnly() throws {
        let server = try TestServer()
        let response = try server.client().send(method: "HEAD", target: "/openapi.json")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.body.isEmpty)
    }

    @Test func otherMethodsFindNoRoute() throws {
        let server = try TestServer()
        let response = try server.client().send(method: "POST", target: "/openapi.json")
        #expect(response.status == 404)
    }

    @Test func route() throws {
        #expect(try routed("/openapi.json") == .kit(.openAPIDocument))
        #expect(try routed("/openapi.json/") == .gcs(.xmlBucket(try BucketName("openapi.json"))))
        #expect(try routed("/v0/openapi.json") == .firebase(.unknown))
    }

    @Test func isAnOpenAPI31Document() throws {
        let server = try TestServer()
        let response = try server.client().send(method: "GET", target: "/openapi.json")
        let document = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect((document?["openapi"] as? String)?.hasPrefix("3.1.") == true)
        #expect((document?["paths"] as? [String: Any])?["/openapi.json"] != nil)
    }
}
