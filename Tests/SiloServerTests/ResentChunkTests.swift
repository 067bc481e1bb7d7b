import Foundation
import SiloCore
import SiloHTTP
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// A client that lost the answer to a resumable upload's last chunk sends it again. GCS completes the upload on the
/// request that states the total once every byte is there, whatever that request's own bytes are: the resent bytes
/// are ignored. So the retry answers with the object, on the JSON and XML APIs (`Content-Range`) and on v0
/// (`X-Goog-Upload-Offset`), instead of a 308 that leaves the session open.
@Suite struct ResentChunkTests {
    let server: TestServer
    let client: HTTPTestClient
    static let half = 256 << 10
    static let body = pattern(2 * half, seed: 11)

    init() throws {
        server = try TestServer()
        client = server.client()
        try XMLMultipartTests.createBucket(client)
    }

    /// Starts a JSON or XML session for `name` and sends both halves without stating the total (`*`), as a client
    /// streaming an upload of unknown length does; returns the session's path.
    private func sessionWithEveryByte(_ name: String, xml: Bool) throws -> String {
        let path: String
        if xml {
            let started = try client.send(
                method: "POST", target: XMLMultipartTests.path(name), headers: ["x-goog-resumable": "start"])
            let location = try #require(started.headers["Location"])
            path = String(location[location.range(of: "/\(bucket)/")!.lowerBound...])
        } else {
            let started = try client.send(
                method: "POST",
                target: "/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&name="
                    + PercentCoding.encodeComponent(name),
                headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
            let location = try #require(started.headers["Location"])
            path = String(location[location.range(of: "/upload/")!.lowerBound...])
        }
        for (first, last) in [(0, Self.half - 1), (Self.half, 2 * Self.half - 1)] {
            let chunk = try client.send(
                method: "PUT", target: path, headers: ["Content-Range": "bytes \(first)-\(last)/*"],
                body: Array(Self.body[first...last]))
            #expect(chunk.status == 308)
            #expect(chunk.headers["Range"] == "bytes=0-\(last)")
        }
        return path
    }

    @Test(arguments: [false, true])
    func theResentLastChunkStatingTheTotalCompletesTheUpload(xml: Bool) throws {
        let name = "resent/\(xml ? "xml" : "json")"
        let path = try sessionWithEveryByte(name, xml: xml)
        let total = 2 * Self.half
        // The last chunk again, now with the total: every byte is there, so this completes the upload.
        let final = try client.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes \(Self.half)-\(total - 1)/\(total)"],
            body: Array(Self.body[Self.half...]))
        #expect(final.status == 200, "\(final.status) \(final.text)")
        #expect(try client.get(objectPath(name) + "?alt=media").body == Self.body)
        // The same request once more answers with the same object (the session is final).
        let again = try client.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes \(Self.half)-\(total - 1)/\(total)"],
            body: Array(Self.body[Self.half...]))
        #expect(again.status == 200)
    }

    @Test(arguments: [false, true])
    func aResentChunkThatCompletesNothingStillAnswers308(xml: Bool) throws {
        let name = "resent-open/\(xml ? "xml" : "json")"
        let path = try sessionWithEveryByte(name, xml: xml)
        // The first chunk again, no total: the bytes are ignored and the session says what it has.
        let resent = try client.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes 0-\(Self.half - 1)/*"],
            body: Array(Self.body[0..<Self.half]))
        #expect(resent.status == 308)
        #expect(resent.headers["Range"] == "bytes=0-\(2 * Self.half - 1)")
        // A chunk that overlaps the end adds only what is new, and with the total completes the upload.
        let tail = pattern(1000, seed: 12)
        let overlapping = Array(Self.body[(Self.half)...]) + tail
        let total = 2 * Self.half + tail.count
        let final = try client.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes \(Self.half)-\(total - 1)/\(total)"],
            body: overlapping)
        #expect(final.status == 200)
        #expect(try client.get(objectPath(name) + "?alt=media").body == Self.body + tail)
    }

    @Test func v0ResentUploadAndFinalizeCompletesTheUpload() throws {
        let name = "resent/v0"
        let started = try client.send(
            method: "POST", target: bucketPath() + "?name=" + PercentCoding.encodeComponent(name),
            headers: [
                "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                "X-Goog-Upload-Header-Content-Length": String(Self.body.count),
            ])
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let path = String(url[url.range(of: "/v0/")!.lowerBound...])
        for offset in [0, Self.half] {
            let chunk = try client.send(
                method: "POST", target: path,
                headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": String(offset)],
                body: Array(Self.body[offset..<(offset + Self.half)]))
            #expect(chunk.status == 200)
        }
        // The last chunk again, now with finalize, from its old offset: the bytes are there, so it finalizes.
        let final = try client.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": String(Self.half)],
            body: Array(Self.body[Self.half...]))
        #expect(final.status == 200, "\(final.status) \(final.text)")
        #expect(final.headers["X-Goog-Upload-Status"] == "final")
        #expect(try client.get(objectPath(name) + "?alt=media").body == Self.body)
        // An offset that is neither where the session is nor reaches it is still refused.
        let other = try client.send(
            method: "POST", target: bucketPath() + "?name=other",
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"])
        let otherURL = try #require(other.headers["X-Goog-Upload-URL"])
        let otherPath = String(otherURL[otherURL.range(of: "/v0/")!.lowerBound...])
        _ = try client.send(
            method: "POST", target: otherPath,
            headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"],
            body: Array(Self.body[0..<Self.half]))
        let short = try client.send(
            method: "POST", target: otherPath,
            headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"], body: Array(Self.body[0..<10]))
        #expect(short.status == 400)
    }
}
