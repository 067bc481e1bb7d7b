import SiloCore
import SiloHTTP
import SiloServer
import SiloTesting
import SiloWire
import Testing

/// Issue 13: the GCS JSON API's object resource and listing as google-cloud-storage and gcsfs rely on them.
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
        for time in ["2026-03-04T05:06:07.123456Z", "2026-03-04T05:06:07.120Z"] {
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
}
