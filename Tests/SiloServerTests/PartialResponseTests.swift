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

/// The `fields` selector's syntax and what it keeps, on values (``FieldSelection``).
@Suite struct FieldSelectionTests {
    func select(_ fields: String, _ json: String) throws -> String {
        String(
            decoding: try FieldSelection(parsing: fields).apply(to: JSONValue.parse(json)).serialized(), as: UTF8.self)
    }

    @Test("names, paths, groups and the wildcard keep what they name, in the resource's order")
    func selects() throws {
        let object =
            #"{"kind":"k","name":"n","size":"3","owner":{"entity":"e","entityId":"i"},"metadata":{"a":"1","b":"2"}}"#
        #expect(try select("size,name", object) == #"{"name":"n","size":"3"}"#)
        #expect(try select("owner/entity", object) == #"{"owner":{"entity":"e"}}"#)
        #expect(try select("owner(entityId),metadata/b", object) == #"{"owner":{"entityId":"i"},"metadata":{"b":"2"}}"#)
        #expect(try select("*", object) == object)
        #expect(try select(" size , owner( entity ) ", object) == #"{"size":"3","owner":{"entity":"e"}}"#)
        #expect(try select("owner/*", object) == #"{"owner":{"entity":"e","entityId":"i"}}"#)
        // Kept whole once any part keeps it whole, whichever comes first.
        #expect(try select("owner,owner/entity", object) == select("owner/entity,owner", object))
        #expect(try select("owner/entity,owner", object) == #"{"owner":{"entity":"e","entityId":"i"}}"#)
        // Absent members are simply absent, and so is an object none of whose members are selected.
        #expect(try select("timeDeleted", object) == "{}")
        #expect(try select("owner/role,name", object) == #"{"name":"n"}"#)
    }

    @Test("a selection inside an array applies to every element")
    func arrays() throws {
        let list =
            #"{"kind":"storage#objects","nextPageToken":"t","items":[{"name":"a","size":"1","etag":"x"},{"name":"b","size":"2"}]}"#
        #expect(
            try select("items(name,size),nextPageToken", list)
                == #"{"nextPageToken":"t","items":[{"name":"a","size":"1"},{"name":"b","size":"2"}]}"#)
        #expect(try select("items/name", list) == #"{"items":[{"name":"a"},{"name":"b"}]}"#)
        #expect(try select("items/owner", list) == "{}")
    }

    @Test("a malformed selector is refused, naming it")
    func refusals() throws {
        for bad in [
            "", ",", "a,", "a,,b", "a(", "a(b", "a)b", "(a)", "a/", "/a", "a()", "a(b))", "a b", "own er", "a*",
            "a(b)c", "a\tb",
        ] {
            #expect(throws: StorageError.self, "\(bad)") { try FieldSelection(parsing: bad) }
        }
        let deep = Array(repeating: "a", count: 40).joined(separator: "/")
        #expect(throws: StorageError.self) { try FieldSelection(parsing: deep) }
        let nested = String(repeating: "a(", count: 40) + "b" + String(repeating: ")", count: 40)
        #expect(throws: StorageError.self) { try FieldSelection(parsing: nested) }
        let wide = (0..<600).map { "n\($0)" }.joined(separator: ",")
        #expect(throws: StorageError.self) { try FieldSelection(parsing: wide) }
    }

    @Test("the vocabulary is the OpenAPI document's: a name no resource has is refused, a map's keys are free")
    func vocabulary() throws {
        let vocabulary = FieldVocabulary.gcs
        for good in ["name,size", "items(name,metadata/any-key.x)", "labels/team", "contexts/custom/k/value", "*"] {
            try vocabulary.check(FieldSelection(parsing: good))
        }
        for bad in ["nmae", "items(nmae)", "owner/nope"] {
            #expect(throws: StorageError.self, "\(bad)") { try vocabulary.check(FieldSelection(parsing: bad)) }
        }
    }
}

/// `fields` on a live socket, on every kind of JSON API answer, and refused before anything changes.
@Suite struct PartialResponseTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
    }

    func keys(_ response: TestResponse) throws -> [String] { try response.json().keys }

    @Test("objects, lists, buckets, ACLs, IAM policies, HMAC keys and uploads answer only what `fields` selects")
    func everyAnswer() throws {
        for name in ["a.txt", "b.txt", "dir/c.txt"] { try client.mediaUpload(name, bytes(name)) }
        let object = try client.get("/storage/v1/b/\(bucket)/o/a.txt?fields=name,size")
        #expect(object.status == 200)
        #expect(try keys(object) == ["name", "size"])
        let list = try client.get("/storage/v1/b/\(bucket)/o?maxResults=1&fields=items(name,size),nextPageToken")
        #expect(try keys(list) == ["nextPageToken", "items"])
        let item = try list.json()["items"]?.arrayValue?.first?.objectValue
        #expect(item?.keys == ["name", "size"])
        let prefixes = try client.get("/storage/v1/b/\(bucket)/o?delimiter=/&fields=prefixes")
        #expect(try prefixes.json()["prefixes"] == .array([.string("dir/")]))
        let bucketAnswer = try client.get("/storage/v1/b/\(bucket)?fields=name,versioning/enabled")
        #expect(try keys(bucketAnswer) == ["name"] || keys(bucketAnswer) == ["name", "versioning"])
        let acl = try client.get("/storage/v1/b/\(bucket)/o/a.txt/acl?fields=items/role")
        #expect(acl.status == 200)
        let entries = try acl.json()["items"]?.arrayValue ?? []
        #expect(!entries.isEmpty && entries.allSatisfy { $0.objectValue?.keys == ["role"] })
        let policy = try client.get("/storage/v1/b/\(bucket)/iam?fields=bindings/role")
        #expect(policy.status == 200)
        #expect(try keys(policy).allSatisfy { $0 == "bindings" })
        // An HMAC key's answer: its secret stays out when not selected.
        let hmacKeys = "/storage/v1/projects/silo-test/hmacKeys"
        let created = try client.send(
            method: "POST",
            target: hmacKeys + "?serviceAccountEmail=sa%40silo-test.iam.gserviceaccount.com&fields=metadata/accessId")
        #expect(created.status == 200)
        #expect(try created.json().keys == ["metadata"])
        #expect(try created.json()["metadata"]?.objectValue?.keys == ["accessId"])
        let listed = try client.get(hmacKeys + "?fields=items/state")
        #expect(try listed.json()["items"]?.arrayValue?.map { $0.objectValue?.keys ?? [] } == [["state"]])
        // An upload's answer, from its body sink.
        let upload = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=u.txt&fields=md5Hash",
            headers: ["Content-Type": "text/plain"], body: bytes("uploaded"))
        #expect(upload.status == 200)
        #expect(try keys(upload) == ["md5Hash"])
        // A media read is the object's bytes, whatever `fields` says.
        let media = try client.get("/storage/v1/b/\(bucket)/o/a.txt?alt=media&fields=name")
        #expect(media.status == 200 && media.body == bytes("a.txt"))
        // No selector, or an empty one, is the whole resource.
        #expect(try keys(client.get("/storage/v1/b/\(bucket)/o/a.txt?fields=")).contains("md5Hash"))
    }

    @Test("a refused selector is GCS's 400 invalidParameter, and the change it came with is not made")
    func refusedBeforeTheHandler() throws {
        try client.mediaUpload("keep.txt", bytes("x"))
        for bad in ["nmae", "name(", "items(name"] {
            let refused = try client.send(
                method: "PATCH",
                target: "/storage/v1/b/\(bucket)/o/keep.txt?fields=" + PercentCoding.encodeComponent(bad),
                headers: ["Content-Type": "application/json"], body: bytes(#"{"contentType":"text/changed"}"#))
            #expect(refused.status == 400)
            let detail = try refused.json()["error"]?.objectValue?["errors"]?.arrayValue?.first?.objectValue
            #expect(detail?["reason"] == .string("invalidParameter"))
            #expect(detail?["message"]?.stringValue?.hasPrefix("Invalid field selection") == true)
        }
        let after = try client.get("/storage/v1/b/\(bucket)/o/keep.txt?fields=contentType,metageneration")
        #expect(try after.json()["metageneration"] == .string("1"))
        #expect(try after.json()["contentType"] != .string("text/changed"))
    }

    @Test("every member the server renders is in the OpenAPI document, so the selector accepts it")
    func renderedNamesAreSelectable() throws {
        try client.mediaUpload("all.txt", bytes("x"))
        _ = try client.send(
            method: "PATCH", target: "/storage/v1/b/\(bucket)/o/all.txt",
            headers: ["Content-Type": "application/json"],
            body: bytes(#"{"metadata":{"k":"v"},"customTime":"2026-01-01T00:00:00Z","temporaryHold":true}"#))
        let kms = "projects/p/locations/l/keyRings/r/cryptoKeys/k"
        let keyed = try client.send(
            method: "PUT", target: "/\(bucket)/kms.txt", headers: ["x-goog-encryption-kms-key-name": kms],
            body: bytes("k"))
        #expect(keyed.status == 200)
        #expect(try client.get("/storage/v1/b/\(bucket)/o/kms.txt").json()["kmsKeyName"] == .string(kms))
        var seen: Set<String> = []
        func collect(_ value: JSONValue, under parent: String?) {
            switch value {
            case .object(let object):
                for (key, member) in object.members {
                    if let parent, FieldVocabulary.gcs.maps.contains(parent) {
                        collect(member, under: nil)
                    } else {
                        seen.insert(key)
                        collect(member, under: key)
                    }
                }
            case .array(let elements): elements.forEach { collect($0, under: parent) }
            default: break
            }
        }
        for target in [
            "/storage/v1/b/\(bucket)/o/all.txt?projection=full", "/storage/v1/b/\(bucket)/o?projection=full",
            "/storage/v1/b/\(bucket)/o/kms.txt",
            "/storage/v1/b/\(bucket)?projection=full", "/storage/v1/b?project=p", "/storage/v1/b/\(bucket)/iam",
            "/storage/v1/b/\(bucket)/o/all.txt/acl", "/storage/v1/b/\(bucket)/acl",
            "/storage/v1/b/\(bucket)/defaultObjectAcl",
        ] {
            let response = try client.get(target)
            #expect(response.status == 200, "\(target)")
            collect(.object(try response.json()), under: nil)
        }
        #expect(seen.count > 30)
        // The document's names alone: whatever Silo renders, the document describes.
        let unknown = seen.subtracting(FieldVocabulary(openAPI: OpenAPIDocument.bytes).names)
        #expect(unknown.isEmpty, "rendered but not in docs/openapi.json: \(unknown.sorted())")
    }
}
