import SiloHTTP
import SiloTesting
import Testing

/// A thumbnail is user bytes too: each of its answers — made, from the disk cache, from memory (headers formatted
/// once), HEAD, 304 — is sandboxed and nosniff like every download (docs/threat-model.md, "User content and the
/// console's origin").
@Suite struct ThumbnailIsolationTests {
    @Test func everyThumbnailAnswerIsSandboxed() throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer()
        let client = server.client()
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        var answers: [(String, TestResponse)] = []
        let made = try client.thumbnail("photo.jpg", "width=64&height=64")
        answers.append(("made", made))
        answers.append(("from memory", try client.thumbnail("photo.jpg", "width=64&height=64")))
        answers.append(
            ("HEAD", try client.send(method: "HEAD", target: objectPath("photo.jpg") + "?alt=media&width=64&height=64"))
        )
        let etag = try #require(made.headers["ETag"])
        answers.append(
            ("304", try client.thumbnail("photo.jpg", "width=64&height=64", headers: ["If-None-Match": etag])))
        for (what, response) in answers {
            #expect([200, 304].contains(response.status), "\(what)")
            #expect(
                response.headers.values("Content-Security-Policy") == ["sandbox allow-downloads allow-modals"],
                "\(what)")
            #expect(response.headers.values("X-Content-Type-Options") == ["nosniff"], "\(what)")
        }
    }
}
