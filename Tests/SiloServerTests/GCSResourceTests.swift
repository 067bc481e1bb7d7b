import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The GCS JSON API's object resource and listing as google-cloud-storage and gcsfs rely on them.
@Suite struct GCSResourceTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
    }

    func gcs(_ name: String) -> String { "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name) }

    func patch(_ name: String, _ json: String) throws -> TestResponse {
        try client.send(
            method: "PATCH", target: gcs(name), headers: ["Content-Type": "application/json"], body: bytes(json))
    }

    @Test("GCS media downloads carry x-goog-meta-*; v0 downloads do not")
    func customMetadataHeaders() throws {
        try client.mediaUpload("m.txt", bytes("body"))
        #expect(try patch("m.txt", #"{"metadata":{"color":"blue","Size":"10"}}"#).status == 200)
        let media = try client.get(gcs("m.txt") + "?alt=media")
        #expect(media.headers["X-Goog-Meta-color"] == "blue")
        #expect(media.headers["x-goog-meta-size"] == "10")
        #expect(media.headers["X-Goog-Meta-firebaseStorageDownloadTokens"] != nil)
        #expect(media.headers["X-Goog-Generation"] != nil && media.headers["X-Goog-Hash"] != nil)
        let ranged = try client.get(gcs("m.txt") + "?alt=media", headers: ["Range": "bytes=0-1"])
        #expect(ranged.status == 206 && ranged.headers["X-Goog-Meta-color"] == "blue")
        let v0 = try client.get(objectPath("m.txt") + "?alt=media")
        #expect(v0.headers["X-Goog-Meta-color"] == nil)
    }

    @Test("customTime reads back at the precision it was set")
    func customTimePrecision() throws {
        try client.mediaUpload("t.txt", bytes("x"))
        // In increasing order: customTime only moves forward.
        for time in ["2026-03-04T05:06:07.120Z", "2026-03-04T05:06:07.123456Z"] {
            let r = try patch("t.txt", #"{"customTime":"\#(time)"}"#)
            #expect(try r.string("customTime") == time)
            #expect(try client.get(gcs("t.txt")).string("customTime") == time)
        }
    }

    @Test("matchGlob: **/ matches zero segments; a delimiter other than / is refused")
    func matchGlob() throws {
        for name in ["x", "a/x", "a/b/x", "ax"] { try client.mediaUpload(name, bytes(name)) }
        let listed = try client.get("/storage/v1/b/\(bucket)/o?matchGlob=" + PercentCoding.encodeComponent("**/x"))
        let names = try listed.json()["items"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue }
        #expect(names == ["a/b/x", "a/x", "x"])
        let refused = try client.get(
            "/storage/v1/b/\(bucket)/o?delimiter=-&matchGlob=" + PercentCoding.encodeComponent("*"))
        #expect(refused.status == 400)
    }

    func bucketWrite(_ method: String, _ json: String) throws -> TestResponse {
        try client.send(
            method: method, target: "/storage/v1/b/\(bucket)", headers: ["Content-Type": "application/json"],
            body: bytes(json))
    }

    @Test("bucket fields keep GCS's shape: unknown keys and wrong types inside a field are 400")
    func bucketFieldShapes() throws {
        try client.mediaUpload("x", bytes("x"))
        for body in [
            #"{"billing":{"requesterPays":"yes"}}"#, #"{"billing":{"payer":true}}"#,
            #"{"website":{"mainPageSuffix":1}}"#,
            #"{"cors":[{"origin":"*"}]}"#, #"{"cors":[null]}"#, #"{"cors":[{"maxAgeSeconds":-1}]}"#,
            #"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"age":"ten"}}]}}"#,
            #"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"createdBefore":"yesterday"}}]}}"#,
            #"{"lifecycle":{"rule":[{"action":{"type":"Delete","storageClass":"WARM"}}]}}"#,
            #"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"matchesStorageClass":["WARM"]}}]}}"#,
            #"{"retentionPolicy":{"retentionPeriod":"10","note":"x"}}"#, #"{"ipFilter":{"mode":"Sometimes"}}"#,
            #"{"encryption":{"customerManagedEncryptionEnforcementConfig":{"restrictionMode":"Maybe"}}}"#,
            #"{"hierarchicalNamespace":{"enabled":1}}"#, #"{"logging":{"logBucket":["a"]}}"#,
        ] {
            for method in ["PATCH", "PUT"] {
                let r = try bucketWrite(method, body)
                #expect(r.status == 400, "\(method) \(body): \(r.text)")
            }
        }
        let good = try bucketWrite(
            "PATCH",
            #"{"billing":{"requesterPays":true},"cors":[{"origin":["*"],"method":["GET"],"maxAgeSeconds":60}],"#
                + #""lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"age":30,"createdBefore":"2026-01-02"}}]}}"#
        )
        #expect(good.status == 200, "\(good.text)")
        #expect(try good.json()["billing"] == .object(["requesterPays": .bool(true)]))
    }

    @Test("a replaced bucket field keeps no nulls, and autoclass off has no terminal update time of the client's")
    func bucketReplaceDropsNulls() throws {
        try client.mediaUpload("x", bytes("x"))
        let put = try bucketWrite(
            "PUT",
            #"{"billing":{"requesterPays":null},"labels":{"a":"1","b":null},"website":{"mainPageSuffix":"i.html","#
                + #""notFoundPage":null},"autoclass":{"enabled":false,"terminalStorageClassUpdateTime":"soon"}}"#)
        #expect(put.status == 200, "\(put.text)")
        let json = try put.json()
        #expect(json["billing"] == .object([:]))
        #expect(json["labels"] == .object(["a": .string("1")]))
        #expect(json["website"] == .object(["mainPageSuffix": .string("i.html")]))
        #expect(json["autoclass"]?.objectValue?["terminalStorageClassUpdateTime"] == nil)
        let patched = try bucketWrite("PATCH", #"{"cors":[{"origin":["*"],"method":null}]}"#)
        #expect(try patched.json()["cors"] == .array([.object(["origin": .array([.string("*")])])]))
    }

    @Test("IAM bindings take only role, members and a condition of strings")
    func iamBindingShape() throws {
        try client.mediaUpload("x", bytes("x"))
        let target = "/storage/v1/b/\(bucket)/iam"
        for body in [
            #"{"bindings":[{"role":"roles/storage.objectViewer","members":["allUsers"],"extra":1}]}"#,
            #"{"bindings":[{"role":"roles/x","members":["user:a@b.c"],"condition":{"expression":"true","title":5}}]}"#,
            #"{"bindings":[{"role":"roles/x","members":["user:a@b.c"],"condition":{"expression":"true","x":"y"}}]}"#,
        ] {
            let r = try client.send(
                method: "PUT", target: target, headers: ["Content-Type": "application/json"], body: bytes(body))
            #expect(r.status == 400, "\(body): \(r.text)")
        }
        let ok = try client.send(
            method: "PUT", target: target, headers: ["Content-Type": "application/json"],
            body: bytes(#"{"bindings":[{"role":"roles/storage.objectViewer","members":["allUsers"]}]}"#))
        #expect(ok.status == 200, "\(ok.text)")
    }

    @Test("managed folder IAM answers 501 as docs/gcs-api.md says, not 404")
    func managedFolderIAMIsNotImplemented() throws {
        try client.mediaUpload("x", bytes("x"))
        let created = try client.send(
            method: "POST", target: "/storage/v1/b/\(bucket)/managedFolders",
            headers: ["Content-Type": "application/json"], body: bytes(#"{"name":"reports/"}"#))
        #expect(created.status == 200, "\(created.text)")
        for (method, path) in [("GET", "iam"), ("PUT", "iam"), ("GET", "iam/testPermissions")] {
            let r = try client.send(method: method, target: "/storage/v1/b/\(bucket)/managedFolders/reports%2F/\(path)")
            #expect(r.status == 501, "\(method) \(path)")
            #expect(r.text.contains("notImplemented"))
        }
    }
}

/// As firebase-tools' conformance tests and gcloud-aio-storage send it: a GCS resumable session `PUT` without
/// `Content-Range` carries the whole object and finalizes it, empty bodies included.
@Suite struct GCSSingleRequestSessionTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
        _ = try client.send(
            method: "POST", target: "/storage/v1/b", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"name":"\#(bucket)"}"#))
    }

    func start(_ name: String, contentType: String? = nil) throws -> String {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let contentType { headers.set("X-Upload-Content-Type", contentType) }
        let r = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&name=\(name)",
            headers: headers, body: bytes("{}"))
        #expect(r.status == 200)
        let location = try #require(r.headers["Location"])
        return String(location.drop { $0 != "/" }.drop { $0 == "/" }.drop { $0 != "/" })
    }

    @Test("the whole object in one PUT, and an empty one, finalize with the start's content type")
    func singleRequest() throws {
        let target = try start("one.bin", contentType: "image/png")
        let payload = pattern(300_000)
        let put = try client.send(method: "PUT", target: target, body: payload)
        #expect(put.status == 200)
        #expect(try put.string("size") == "300000")
        #expect(try put.string("contentType") == "image/png")
        #expect(try client.get("/storage/v1/b/\(bucket)/o/one.bin?alt=media").body == payload)
        let empty = try client.send(method: "PUT", target: try start("empty.bin"), body: [])
        #expect(empty.status == 200)
        #expect(try empty.string("size") == "0")
        // After chunks with Content-Range, a PUT without one is refused rather than taken as the whole object.
        let chunked = try start("chunked.bin")
        let first = try client.send(
            method: "PUT", target: chunked, headers: ["Content-Range": "bytes 0-262143/*"], body: pattern(262_144))
        #expect(first.status == 308)
        #expect(try client.send(method: "PUT", target: chunked, body: pattern(10)).status == 400)
    }
}
