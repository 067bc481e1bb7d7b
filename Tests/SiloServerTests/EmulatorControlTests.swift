import Foundation
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The Firebase emulator's control endpoints on a live server: `PUT /internal/setRules` as firebase-tools answers it
/// and `@firebase/rules-unit-testing` calls it, `POST /internal/export`, and `POST /internal/reset` leaving the
/// server as freshly started. (tests/integration/emulator_control_test.py drives the same through the binary, with
/// `--rules BUCKET=FILE` and firebase.json.)
@Suite("emulator control endpoints")
struct EmulatorControlTests {
    static func rules(_ statement: String) -> String {
        """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o/{path=**} { \(statement) }
        }
        """
    }

    static func setRules(_ client: HTTPTestClient, _ files: [JSONValue], headers: HTTPHeaders = [:]) throws
        -> TestResponse
    {
        var headers = headers
        headers.set("Content-Type", "application/json")
        let body = JSONValue.object(["rules": .object(["files": .array(files)])])
        return try client.send(method: "PUT", target: "/internal/setRules", headers: headers, body: body.serialized())
    }

    static func file(_ name: String, _ content: String, resource: String? = nil) -> JSONValue {
        var object: JSONObject = ["name": .string(name), "content": .string(content)]
        if let resource { object["resource"] = .string(resource) }
        return .object(object)
    }

    static func message(_ answer: TestResponse) -> String? {
        (try? JSONValue.parse(answer.body))?.objectValue?["message"]?.stringValue
    }

    @Test("setRules replaces the rules in force; a replayed answer does not outlive them")
    func setRulesIsEnforcedAndEndsReplays() throws {
        let server = try TestServer(backend: .embedded)
        let client = server.client()
        #expect(try client.mediaUpload("a.txt", bytes("public")).status == 200)
        let target = objectPath("a.txt") + "?alt=media"
        for _ in 0..<6 { #expect(try client.send(method: "GET", target: target).status == 200) }
        let replayed = try client.scrape().value("silo_replayed_answers_total")
        #expect(replayed > 0 || !ReplayTests.replaysExpected)

        let set = try Self.setRules(client, [Self.file("storage.rules", Self.rules("allow read, write: if false;"))])
        #expect(set.status == 200 && Self.message(set) == "Rules updated successfully", "\(set.text)")
        for _ in 0..<4 { #expect(try client.send(method: "GET", target: target).status == 403) }
        #expect(try client.mediaUpload("b.txt", bytes("x")).status == 403)
        // The rules' owner bypass, as withSecurityRulesDisabled uses it.
        #expect(try client.mediaUpload("b.txt", bytes("x"), headers: ["Authorization": "Firebase owner"]).status == 200)
    }

    @Test("one ruleset per bucket: each bucket its own, a bucket none names refused but to the admin")
    func perBucketRules() throws {
        let server = try TestServer(backend: .embedded)
        let client = server.client()
        let set = try Self.setRules(
            client,
            [
                Self.file("open.rules", Self.rules("allow read, write;"), resource: "bucket-open"),
                Self.file("closed.rules", Self.rules("allow read, write: if false;"), resource: "bucket-closed"),
            ])
        #expect(set.status == 200, "\(set.text)")
        func upload(_ bucket: String, _ headers: HTTPHeaders = [:]) throws -> Int {
            try client.send(
                method: "POST", target: bucketPath(bucket) + "?name=x.txt", headers: headers, body: bytes("x")
            )
            .status
        }
        #expect(try upload("bucket-open") == 200)
        #expect(try upload("bucket-closed") == 403)
        #expect(try upload("bucket-unnamed") == 403)
        #expect(try upload("bucket-unnamed", ["Authorization": "Firebase owner"]) == 200)
    }

    @Test("setRules refuses as firebase-tools does, and keeps the rules when they do not compile")
    func setRulesRefusals() throws {
        let server = try TestServer(backend: .embedded)
        let client = server.client()
        let empty = try client.send(
            method: "PUT", target: "/internal/setRules", headers: ["Content-Type": "application/json"],
            body: bytes("{}"))
        #expect(empty.status == 400 && Self.message(empty) == "Request body must include 'rules.files' array")
        let none = try Self.setRules(client, [])
        #expect(none.status == 400 && Self.message(none) == "Request body must include 'rules.files' array")
        let nameless = try Self.setRules(client, [.object(["content": .string("x")])])
        #expect(
            nameless.status == 400
                && Self.message(nameless) == "Each member of 'rules.files' array must contain 'name' and 'content'")
        let resourceless = try Self.setRules(
            client, [Self.file("a", "x", resource: "bucket-a"), Self.file("b", "x")])
        #expect(
            resourceless.status == 400
                && Self.message(resourceless)
                    == "Each member of 'rules.files' array must contain 'name', 'content', and 'resource'"
        )

        #expect(try Self.setRules(client, [Self.file("s", Self.rules("allow read;"))]).status == 200)
        let broken = try Self.setRules(client, [Self.file("s", "service firebase.storage { match")])
        #expect(
            broken.status == 400
                && Self.message(broken) == "There was an error updating rules, see logs for more details")
        // Still the rules before: reads allowed, writes not.
        #expect(try client.mediaUpload("c.txt", bytes("x")).status == 403)
    }

    @Test("outside emulator mode the control endpoints are the admin's")
    func adminOnlyOutsideEmulatorMode() throws {
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let server = try TestServer(backend: .embedded, configuration: configuration)
        let client = server.client()
        let set = try Self.setRules(client, [Self.file("s", Self.rules("allow read;"))])
        #expect(set.status == 403)
        let export = try client.send(method: "POST", target: "/internal/export", body: bytes(#"{"path":"/tmp/x"}"#))
        #expect(export.status == 403)
        #expect(try client.send(method: "POST", target: "/internal/reset").status == 403)
    }

    @Test("export writes the storage export layout into the named directory, swapped in whole")
    func exportLayout() throws {
        let server = try TestServer(backend: .embedded)
        let client = server.client()
        #expect(try client.mediaUpload("dir/a.txt", bytes("alpha"), contentType: "text/plain").status == 200)
        let missing = try client.send(method: "POST", target: "/internal/export", body: bytes(#"{"initiatedBy":"x"}"#))
        #expect(missing.status == 400 && missing.text == "Export request body must include 'path'.")

        let root = try TemporaryDirectory()
        let target = root.path + "/storage_export"
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: target + "/stale", contents: Data("old".utf8)))
        let body = JSONValue.object(["path": .string(target), "initiatedBy": .string("test")]).serialized()
        let export = try client.send(method: "POST", target: "/internal/export", body: body)
        #expect(export.status == 200, "\(export.text)")

        let fm = FileManager.default
        #expect(!fm.fileExists(atPath: target + "/stale"))
        #expect(try fm.contentsOfDirectory(atPath: root.path) == ["storage_export"])
        let buckets = try JSONValue.parse(Array(fm.contents(atPath: target + "/buckets.json") ?? Data()))
        let ids = buckets.objectValue?["buckets"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue }
        #expect(ids?.contains(bucket) == true)
        let files = try fm.contentsOfDirectory(atPath: target + "/metadata")
        #expect(files.count == 1)
        let metadata = try JSONValue.parse(Array(fm.contents(atPath: target + "/metadata/" + files[0]) ?? Data()))
        #expect(metadata.objectValue?["name"]?.stringValue == "dir/a.txt")
        #expect(metadata.objectValue?["bucket"]?.stringValue == bucket)
        #expect(metadata.objectValue?["size"]?.int64Value == 5)
        let blob = fm.contents(atPath: target + "/blobs/" + String(files[0].dropLast(5)))
        #expect(blob == Data("alpha".utf8))
    }

    @Test("after reset the server is as if freshly started: no objects, and its startup buckets exist")
    func resetRestoresStartupBuckets() throws {
        var configuration = ServerConfiguration()
        let startup = try BucketName("startup-bucket")
        configuration.defaultBuckets = [startup]
        let server = try TestServer(backend: .embedded, configuration: configuration)
        _ = try server.metadata.ensureBucket(startup)
        let client = server.client()
        #expect(try client.mediaUpload("x.txt", bytes("x")).status == 200)
        #expect(try client.send(method: "POST", target: "/internal/reset").status == 200)
        #expect(try client.send(method: "GET", target: objectPath("x.txt")).status == 404)
        #expect(try client.send(method: "GET", target: "/storage/v1/b/startup-bucket").status == 200)
        #expect(try client.send(method: "GET", target: "/storage/v1/b/\(bucket)").status == 404)
    }
}
