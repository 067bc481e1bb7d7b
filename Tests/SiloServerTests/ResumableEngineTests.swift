import Foundation
import SiloCore
import SiloHTTP
import SiloTestStores
import SiloTesting
import Testing

@testable import SiloServerKit

/// The resumable engine (`ResumableSessions`) under the interleaving HTTP cannot stage on demand: a protocol read a
/// session, another request appended a chunk, then this one got the claim.
@Suite struct ResumableEngineTests {
    @Test func aChunkDecidedOnAnOffsetThatMovedWritesNothing() throws {
        let server = try TestServer()
        let client = server.client()
        let started = try client.send(
            method: "POST", target: bucketPath() + "?name=raced.bin", headers: ["X-Goog-Upload-Command": "start"])
        let id = try #require(started.headers["X-GUploader-UploadID"])
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let path = String(url[url.range(of: "/v0/")!.lowerBound...])
        let app = server.app
        // What a protocol read before the other chunk landed.
        let stale = try #require(try app.service.metadata.session(id: id))
        #expect(stale.received == 0)
        let first = pattern(1000)
        let appended = try client.send(
            method: "POST", target: path, headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"],
            body: first)
        #expect(appended.headers["X-Goog-Upload-Size-Received"] == "1000")

        let sessions = ResumableSessions(service: app.service, registry: app.registry, commit: app.sessionCommit)
        let refusal = #expect(throws: StorageError.self) {
            _ = try sessions.append(stale, finalize: true, resent: 0) { _ in Reply.empty(200) }
        }
        #expect(refusal?.code == .unavailable)
        // The claim was given back, and the 1,000 durable bytes are whole: the upload finishes with them.
        let finished = try client.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "finalize", "X-Goog-Upload-Offset": "1000"])
        #expect(finished.status == 200)
        #expect(try client.get(objectPath("raced.bin") + "?alt=media").body == first)
    }

    @Test func aCancelDecidedBeforeTheSessionFinishedLeavesItFinished() throws {
        let server = try TestServer()
        let client = server.client()
        let started = try client.send(
            method: "POST", target: bucketPath() + "?name=kept.bin", headers: ["X-Goog-Upload-Command": "start"])
        let id = try #require(started.headers["X-GUploader-UploadID"])
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let path = String(url[url.range(of: "/v0/")!.lowerBound...])
        let app = server.app
        let stale = try #require(try app.service.metadata.session(id: id))
        let content = pattern(6000, seed: 9)
        let finished = try client.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"], body: content)
        #expect(finished.status == 200)

        let sessions = ResumableSessions(service: app.service, registry: app.registry, commit: app.sessionCommit)
        #expect(throws: StorageError.self) { _ = try sessions.cancel(stale) }
        #expect(try app.service.metadata.session(id: id)?.state == .finalized)
        app.waitForBlobReclaims()
        _ = app.collectGarbage(graceSeconds: 0)
        #expect(try client.get(objectPath("kept.bin") + "?alt=media").body == content)
    }
}
