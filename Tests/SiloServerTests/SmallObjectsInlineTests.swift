import Foundation
import SiloCore
import SiloHTTP
import SiloHashing
import SiloSQLite
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// Small objects' bytes kept in the metadata store (docs/architecture-notes.md, "Small objects inline"): every
/// upload path, on the embedded stores (SQLite + disk), leaves no file for an object within the limit, one for a
/// larger one, and reads, ranges, copies and compositions of inline objects answer as of any other.
@Suite struct SmallObjectsInlineTests {
    static let bucket = "demo.appspot.com"
    static let small = Array("a small object, kept inline".utf8)
    /// Past the 4 KiB limit by one byte.
    static let large = (0..<4097).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    static func v0(_ name: String) -> String { "/v0/b/\(bucket)/o/" + PercentCoding.encodeComponent(name) }
    static func gcs(_ name: String) -> String { "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name) }

    func storedFiles(_ server: TestServer) throws -> Set<BlobID> {
        server.app.waitForBlobReclaims()
        return Set(try (server.blobs as? any BlobListing)?.allBlobIDs() ?? [])
    }

    func live(_ server: TestServer, _ name: String) throws -> ObjectRecord {
        try #require(try server.metadata.object(try BucketName(Self.bucket), try ObjectName(name), generation: nil))
    }

    /// Uploads `body` as `name` through one of the upload paths; true when it answered 200.
    func upload(_ client: HTTPTestClient, _ path: String, _ name: String, _ body: [UInt8]) throws {
        let encoded = PercentCoding.encodeComponent(name)
        let response: TestResponse
        switch path {
        case "v0 media":
            response = try client.send(method: "POST", target: "/v0/b/\(Self.bucket)/o?name=\(encoded)", body: body)
        case "v0 multipart":
            let boundary = "inline-test"
            let multipart =
                Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n{\"name\":\"\(name)\"}\r\n".utf8)
                + Array("--\(boundary)\r\nContent-Type: application/octet-stream\r\n\r\n".utf8) + body
                + Array("\r\n--\(boundary)--\r\n".utf8)
            response = try client.send(
                method: "POST", target: "/v0/b/\(Self.bucket)/o",
                headers: [
                    "X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=\(boundary)",
                ], body: multipart)
        case "v0 resumable":
            let started = try client.send(
                method: "POST", target: "/v0/b/\(Self.bucket)/o?name=\(encoded)",
                headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"])
            let url = try #require(started.headers["X-Goog-Upload-URL"])
            response = try client.send(
                method: "POST", target: String(url[url.range(of: "/v0/")!.lowerBound...]),
                headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"], body: body)
        case "GCS media":
            response = try client.send(
                method: "POST", target: "/upload/storage/v1/b/\(Self.bucket)/o?uploadType=media&name=\(encoded)",
                body: body)
        default:
            response = try client.send(method: "PUT", target: "/\(Self.bucket)/\(encoded)", body: body)
        }
        #expect(response.status == 200, "\(path): \(response.text)")
    }

    @Test(arguments: ["v0 media", "v0 multipart", "v0 resumable", "GCS media", "XML PUT"])
    func smallUploadsLeaveNoFileAndLargerOnesOne(_ path: String) throws {
        let server = try TestServer(backend: .embedded)
        let client = server.client()
        try upload(client, path, "small", Self.small)
        try upload(client, path, "large", Self.large)
        _ = server.app.collectGarbage(graceSeconds: 0)
        let small = try live(server, "small")
        let large = try live(server, "large")
        #expect(small.blobID.isInline && !large.blobID.isInline)
        #expect(try server.metadata.inlineBlob(small.blobID) == Self.small)
        // A resumable session's own blob, unused by an inline commit, is gone too.
        #expect(try storedFiles(server) == [large.blobID])
        #expect(try client.get(Self.v0("small") + "?alt=media").body == Self.small)
        #expect(try client.get(Self.v0("large") + "?alt=media").body == Self.large)
        let metadata = try client.get(Self.gcs("small")).json()
        #expect(metadata["size"]?.stringValue == String(Self.small.count))
        let hasher = ObjectHasher()
        Self.small.withUnsafeBytes { hasher.update($0) }
        #expect(metadata["md5Hash"]?.stringValue == Base64.encode(hasher.finalize().md5))
    }

    /// A finalizing chunk commits once: the object and the finished session in one transaction, with no separate
    /// commit of the session's byte count before it (which, for bytes held for an inline commit, would also record
    /// bytes that were never stored anywhere).
    @Test(arguments: [Self.small, Self.large])
    func aFinalizingChunkCommitsOnce(_ body: [UInt8]) throws {
        let server = try TestServer(backend: .embedded)
        guard let sqlite = (server.metadata as? CachingMetadataStore)?.inner as? SQLiteMetadataStore else { return }
        let client = server.client()
        try upload(client, "v0 media", "warm", Self.small)
        let started = try client.send(
            method: "POST", target: "/v0/b/\(Self.bucket)/o?name=once",
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"])
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let before = sqlite.commitCounts.commits
        let finished = try client.send(
            method: "POST", target: String(url[url.range(of: "/v0/")!.lowerBound...]),
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"], body: body)
        #expect(finished.status == 200, "\(finished.text)")
        server.app.waitForBlobReclaims()
        // The commit, plus for an inline commit the collection of the session's unused blob (claim and forget).
        let expected: UInt64 = body.count <= 4096 ? 3 : 1
        #expect(sqlite.commitCounts.commits - before == expected)
        #expect(try client.get(Self.v0("once") + "?alt=media").body == body)
    }

    @Test func inlineObjectsReadCopyComposeAndGoLikeAnyOther() throws {
        let server = try TestServer(backend: .embedded)
        let client = server.client()
        try upload(client, "v0 media", "small", Self.small)
        let first = try live(server, "small")
        let ranged = try client.get(Self.v0("small") + "?alt=media", headers: ["Range": "bytes=2-6"])
        #expect(ranged.status == 206 && ranged.body == Array(Self.small[2...6]))

        let copied = try client.send(
            method: "POST", target: Self.gcs("small") + "/copyTo/b/\(Self.bucket)/o/copy",
            headers: ["Content-Type": "application/json"], body: bytes("{}"))
        #expect(copied.status == 200, "\(copied.text)")
        #expect(try client.get(Self.v0("copy") + "?alt=media").body == Self.small)
        #expect(try live(server, "copy").blobID.isInline, "a copy within the limit stays inline")
        let pair = try client.send(
            method: "POST", target: Self.gcs("pair") + "/compose", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"sourceObjects":[{"name":"small"},{"name":"copy"}]}"#))
        #expect(pair.status == 200, "\(pair.text)")
        #expect(try client.get(Self.v0("pair") + "?alt=media").body == Self.small + Self.small)
        #expect(try live(server, "pair").blobID.isInline, "a composition within the limit is kept inline")

        try upload(client, "v0 media", "large", Self.large)
        let composed = try client.send(
            method: "POST", target: Self.gcs("joined") + "/compose", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"sourceObjects":[{"name":"small"},{"name":"large"},{"name":"small"}]}"#))
        #expect(composed.status == 200, "\(composed.text)")
        #expect(try client.get(Self.v0("joined") + "?alt=media").body == Self.small + Self.large + Self.small)

        // Replaced and deleted: the collector takes the bytes out of the metadata store.
        try upload(client, "v0 media", "small", Array("newer".utf8))
        #expect(try client.send(method: "DELETE", target: Self.v0("copy")).status == 204)
        _ = server.app.collectGarbage(graceSeconds: 0)
        #expect(try server.metadata.inlineBlob(first.blobID) == nil)
        #expect(try client.get(Self.v0("small") + "?alt=media").body == Array("newer".utf8))
    }
}
