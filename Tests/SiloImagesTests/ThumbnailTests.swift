import Foundation
import SiloCore
import SiloHTTP
import SiloImages
import SiloRules
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Synchronization
import Testing

@Suite("On-demand thumbnails")
struct ThumbnailTests {
    static let cases: [(ThumbnailSpec.Fit, ThumbnailSpec.Format)] = ThumbnailSpec.Fit.allCases.flatMap { fit in
        ThumbnailSpec.Format.allCases.map { (fit, $0) }
    }

    /// Each fit and format against `vipsthumbnail` on the same file: same dimensions, the format's magic bytes, and
    /// a mean difference under 2 of 255 per pixel and band.
    @Test(arguments: cases)
    func matchesVipsthumbnail(fit: ThumbnailSpec.Fit, format: ThumbnailSpec.Format) throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer()
        let client = server.client()
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        let response = try client.thumbnail(
            "photo.jpg", "width=120&height=80&fit=\(fit.rawValue)&format=\(format.rawValue)")
        try #require(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(response.headers["Content-Type"] == format.contentType)
        #expect(GoldenImages.hasMagic(response.body, of: format))
        let spec = try ThumbnailSpec(width: 120, height: 80, fit: fit, format: format)
        let ours = try GoldenImages.write(response.body, "ours-\(spec).\(format.fileExtension)", in: workspace)
        let reference = try GoldenImages.reference(spec, in: workspace)
        let size = try GoldenImages.dimensions(ours)
        #expect(size == (try GoldenImages.dimensions(reference)))
        switch fit {
        case .cover, .fill: #expect(size == (120, 80))
        case .contain: #expect(size == (107, 80))
        }
        let difference = try GoldenImages.meanDifference(ours, reference, in: workspace)
        #expect(difference < 2, "mean difference \(difference) against vipsthumbnail")
    }

    /// A few dozen bytes declaring 100000×100000 pixels: refused with 400 from the header, before any decoding.
    @Test func decompressionBombIsRefused() throws {
        let bomb = GoldenImages.bombPNG(width: 100_000, height: 100_000)
        let server = try thumbnailServer()
        let client = server.client()
        #expect(try client.upload("bomb.png", bomb, contentType: "image/png").status == 200)
        let response = try client.thumbnail("bomb.png", "width=64&height=64")
        #expect(response.status == 400)
        #expect(String(decoding: response.body, as: UTF8.self).contains("100000x100000"))
        // The same refusal from the transformer itself, whatever the limit's source.
        #expect(throws: StorageError.self) {
            try VipsThumbnailer().thumbnail(
                of: .bytes(bomb), try ThumbnailSpec(width: 64, height: 64), limits: ImageLimits())
        }
    }

    @Test func nonImageIsRefused() throws {
        let server = try thumbnailServer()
        let client = server.client()
        #expect(try client.upload("notes.txt", Array("just text".utf8), contentType: "text/plain").status == 200)
        #expect(try client.thumbnail("notes.txt", "width=64&height=64").status == 400)
    }

    /// A server whose rules let anyone read `public/` and nobody `private/`, with the same JPEG uploaded to both.
    private func publicAndPrivateImages() throws -> (ThumbnailHarness, HTTPTestClient) {
        let program = try RulesProgram.compile(
            source: """
                rules_version = '2';
                service firebase.storage {
                  match /b/{bucket}/o {
                    match /public/{all=**} { allow read; }
                    match /private/{all=**} { allow read: if false; }
                  }
                }
                """, fileName: "thumbnail.rules")
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer(policy: RulesAccessPolicy(program: program))
        let client = server.client()
        #expect(try client.upload("public/a.jpg", workspace.jpeg).status == 200)
        #expect(try client.upload("private/a.jpg", workspace.jpeg).status == 200)
        return (server, client)
    }

    /// Rules decide a thumbnail as they decide a download of the original; a download token grants it.
    @Test func rulesAndDownloadTokensApply() throws {
        let (server, client) = try publicAndPrivateImages()
        #expect(try client.thumbnail("public/a.jpg", "width=64&height=64").status == 200)
        let denied = try client.thumbnail("private/a.jpg", "width=64&height=64")
        #expect(denied.status == 403)
        #expect(server.app.thumbnailCounters.transforms == 1)

        let metadata = try client.send(method: "GET", target: objectPath("private/a.jpg"), headers: admin)
        let token = try #require(metadata.json()["downloadTokens"]?.stringValue)
        let granted = try client.thumbnail("private/a.jpg", "width=64&height=64&token=" + token)
        #expect(granted.status == 200)
        #expect(GoldenImages.hasMagic(granted.body, of: .webp))
        #expect(try client.thumbnail("private/a.jpg", "width=64&height=64&token=not-the-token").status == 403)
    }

    /// The second request is answered from the cache: the transform counter does not move; a 304 costs none
    /// either; an overwrite (new generation) is transformed again.
    @Test func cacheHitsAndConditionalRequestsDoNotTransform() throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer()
        let client = server.client()
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        let first = try client.thumbnail("photo.jpg", "width=256&height=256")
        #expect(first.status == 200)
        #expect(first.headers["X-Silo-Thumbnail-Cache"] == "miss")
        #expect(server.app.thumbnailCounters.transforms == 1)
        let second = try client.thumbnail("photo.jpg", "width=256&height=256")
        #expect(second.status == 200)
        #expect(second.headers["X-Silo-Thumbnail-Cache"] == "hit")
        #expect(second.body == first.body)
        #expect(server.app.thumbnailCounters.transforms == 1)
        #expect(server.app.thumbnailCounters.cacheHits == 1)

        let etag = try #require(first.headers["ETag"])
        #expect(first.headers["Cache-Control"] == "private, max-age=3600")
        let notModified = try client.thumbnail("photo.jpg", "width=256&height=256", headers: ["If-None-Match": etag])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
        // Other parameters are another resource with another ETag.
        let other = try client.thumbnail(
            "photo.jpg", "width=256&height=256&format=png", headers: ["If-None-Match": etag])
        #expect(other.status == 200)
        #expect(other.headers["ETag"] != etag)
        #expect(server.app.thumbnailCounters.transforms == 2)

        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        let overwritten = try client.thumbnail("photo.jpg", "width=256&height=256", headers: ["If-None-Match": etag])
        #expect(overwritten.status == 200)
        #expect(overwritten.headers["X-Silo-Thumbnail-Cache"] == "miss")
        #expect(server.app.thumbnailCounters.transforms == 3)
    }

    /// An empty object is refused with 400 before libvips sees it (libvips 8.14 aborts the process on an assertion
    /// for a source of no bytes), read in place from disk or from memory; the server answers the next request.
    @Test(arguments: [false, true]) func anEmptyObjectIsRefusedAndTheServerStaysUp(inMemory: Bool) throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer(cachingMetadata: inMemory)
        let client = server.client()
        #expect(try client.upload("empty.jpg", []).status == 200)
        let refused = try client.thumbnail("empty.jpg", "width=64&height=64")
        #expect(refused.status == 400)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("empty"))
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        #expect(try server.client().thumbnail("photo.jpg", "width=64&height=64").status == 200)
    }

    /// Concurrent misses of one thumbnail make it once: the first transforms, the others wait for its result (and
    /// are answered with it), instead of each decoding the original. The gate holds the first transform until the
    /// other requests are seen waiting, so the overlap is certain.
    @Test func concurrentMissesShareOneTransform() throws {
        let workspace = try GoldenImages.workspace()
        let gate = GatedTransformer()
        let server = try thumbnailServer(transformer: gate)
        #expect(try server.client().upload("photo.jpg", workspace.jpeg).status == 200)
        let answers = Mutex<[TestResponse]>([])
        let group = DispatchGroup()
        let port = server.server.port
        for _ in 0..<4 {
            DispatchQueue.global().async(group: group) {
                let client = HTTPTestClient(port: port)
                if let response = try? client.thumbnail("photo.jpg", "width=120&height=80") {
                    answers.withLock { $0.append(response) }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while server.app.thumbnailCounters.waiting < 3 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(server.app.thumbnailCounters.waiting == 3)
        #expect(gate.arrived.load(ordering: .relaxed) == 1)
        gate.open(4)
        #expect(group.wait(timeout: .now() + 30) == .success)
        let responses = answers.withLock { $0 }
        #expect(responses.count == 4)
        #expect(responses.allSatisfy { $0.status == 200 && $0.body == responses[0].body })
        #expect(server.app.thumbnailCounters.transforms == 1)
        #expect(server.app.thumbnailCounters.shared == 3)
        #expect(gate.arrived.load(ordering: .relaxed) == 1)
        let metrics = try server.client().send(method: "GET", target: "/metrics", headers: admin)
        let lines = String(decoding: metrics.body, as: UTF8.self).split(separator: "\n")
        #expect(lines.contains("silo_thumbnail_transforms_total 1"))
        #expect(lines.contains(#"silo_cache_lookups_total{cache="thumbnail",result="miss"} 4"#))
    }

    /// The cache holds at most its bound: the least recently used results go first, the newest stay.
    @Test func cacheKeepsItsByteBound() throws {
        let workspace = try GoldenImages.workspace()
        let bound: Int64 = 4 << 10
        let server = try thumbnailServer(cacheBytes: bound)
        let client = server.client()
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        var stored: Int64 = 0
        for quality in 1...40 {
            let response = try client.thumbnail("photo.jpg", "width=64&height=64&quality=\(quality)")
            #expect(response.status == 200)
            stored += Int64(response.body.count)
            #expect(server.app.thumbnailCounters.cachedBytes <= bound)
        }
        #expect(stored > 2 * bound, "the thumbnails made should overflow the bound")
        #expect(
            try client.thumbnail("photo.jpg", "width=64&height=64&quality=40").headers["X-Silo-Thumbnail-Cache"]
                == "hit")
        #expect(
            try client.thumbnail("photo.jpg", "width=64&height=64&quality=1").headers["X-Silo-Thumbnail-Cache"]
                == "miss")
    }

    /// A transform past its time budget is stopped and answered 503, not left running.
    @Test func timeBudgetStopsATransform() throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer(maxSeconds: 0.000_001)
        let client = server.client()
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        let response = try client.thumbnail("photo.jpg", "width=256&height=256")
        #expect(response.status == 503)
    }

    /// Only listed sizes and formats, only in buckets that serve thumbnails, and only with both dimensions.
    @Test func allowListIsEnforced() throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer()
        let client = server.client()
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        for query in [
            "width=300&height=300", "width=64", "height=64", "width=64&height=64&fit=stretch",
            "width=64&height=64&format=gif", "width=64&height=64&quality=0", "width=-64&height=64",
            "width=0064x&height=64",
        ] {
            let response = try client.thumbnail("photo.jpg", query)
            #expect(response.status == 400, "\(query)")
        }
        let elsewhere = try client.send(
            method: "POST", target: "/v0/b/other.appspot.com/o?name=a.jpg",
            headers: ["Authorization": "Bearer owner", "Content-Type": "image/jpeg"], body: workspace.jpeg)
        #expect(elsewhere.status == 200)
        let refused = try client.send(
            method: "GET", target: "/v0/b/other.appspot.com/o/a.jpg?alt=media&width=64&height=64")
        #expect(refused.status == 400)
        #expect(server.app.thumbnailCounters.transforms == 0)
    }

    /// The GCS JSON API's media path, and a blob store without local files (the original read into memory).
    @Test(arguments: [TestServer.Backend.embedded, .memory])
    func gcsMediaPath(backend: TestServer.Backend) throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer(backend: backend)
        let client = server.client()
        #expect(try client.upload("dir/photo.jpg", workspace.jpeg).status == 200)
        let response = try client.send(
            method: "GET", target: "/storage/v1/b/\(bucket)/o/dir%2Fphoto.jpg?alt=media&width=64&height=64&format=jpeg")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "image/jpeg")
        #expect(GoldenImages.hasMagic(response.body, of: .jpeg))
        // The XML API's object GET takes the same parameters.
        let xml = try client.send(method: "GET", target: "/\(bucket)/dir/photo.jpg?width=64&height=64&format=png")
        #expect(xml.status == 200)
        #expect(xml.headers["Content-Type"] == "image/png")
        #expect(GoldenImages.hasMagic(xml.body, of: .png))
    }

    /// A HEAD of a thumbnail never made transforms nothing, on the v0 and the GCS JSON media paths: 200, the type of
    /// the format asked for, the ETag the GET then gives, and no Content-Length (not known until it is made). Its
    /// validators work as the GET's: a matching `If-None-Match` is a 304.
    @Test func headOfAThumbnailNeverMadeDoesNotTransform() throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer()
        let client = server.client()
        #expect(try client.upload("dir/photo.jpg", workspace.jpeg).status == 200)
        let v0 = objectPath("dir/photo.jpg") + "?alt=media&width=64&height=64&format=jpeg"
        let gcs = "/storage/v1/b/\(bucket)/o/dir%2Fphoto.jpg?alt=media&width=64&height=64&format=jpeg"
        var etags: Set<String> = []
        for target in [v0, gcs] {
            let head = try client.send(method: "HEAD", target: target)
            #expect(head.status == 200, "\(target)")
            #expect(head.headers["Content-Type"] == "image/jpeg")
            #expect(head.headers["Content-Length"] == nil)
            #expect(head.headers["Transfer-Encoding"] == nil)
            #expect(head.headers["X-Silo-Thumbnail-Cache"] == "miss")
            #expect(head.body.isEmpty)
            let etag = try #require(head.headers["ETag"])
            etags.insert(etag)
            let notModified = try client.send(method: "HEAD", target: target, headers: ["If-None-Match": etag])
            #expect(notModified.status == 304)
        }
        #expect(etags.count == 1)
        #expect(server.app.thumbnailCounters.transforms == 0)
        let metrics = try client.send(method: "GET", target: "/metrics", headers: admin)
        #expect(
            String(decoding: metrics.body, as: UTF8.self).split(separator: "\n").contains(
                "silo_thumbnail_transforms_total 0"))

        let get = try client.send(method: "GET", target: v0)
        #expect(get.status == 200)
        #expect(get.headers["ETag"] == etags.first)
        #expect(server.app.thumbnailCounters.transforms == 1)
    }

    /// A HEAD after a GET is answered from the cached result — in memory, or on disk only (no memory cache) — with
    /// the GET's ETag, type and length, on both media paths, and no transform.
    @Test(arguments: [16 << 20, 0]) func headAfterAGetMatchesIt(memoryCacheBytes: Int) throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer(memoryCacheBytes: memoryCacheBytes)
        let client = server.client()
        #expect(try client.upload("dir/photo.jpg", workspace.jpeg).status == 200)
        let query = "?alt=media&width=120&height=80&format=png"
        let get = try client.send(method: "GET", target: objectPath("dir/photo.jpg") + query)
        #expect(get.status == 200)
        #expect(server.app.thumbnailCounters.transforms == 1)
        for target in [objectPath("dir/photo.jpg") + query, "/storage/v1/b/\(bucket)/o/dir%2Fphoto.jpg" + query] {
            let head = try client.send(method: "HEAD", target: target)
            #expect(head.status == 200, "\(target)")
            #expect(head.headers["ETag"] == get.headers["ETag"])
            #expect(head.headers["Content-Type"] == "image/png")
            #expect(head.headers["Content-Length"] == String(get.body.count))
            #expect(head.headers["X-Silo-Thumbnail-Cache"] == "hit")
            #expect(head.body.isEmpty)
        }
        #expect(server.app.thumbnailCounters.transforms == 1)
    }

    /// Rules and download tokens decide a HEAD as they decide the GET: the same status for each, and no transform
    /// for a HEAD.
    @Test func headIsDecidedAsTheGet() throws {
        let (server, client) = try publicAndPrivateImages()
        let metadata = try client.send(method: "GET", target: objectPath("private/a.jpg"), headers: admin)
        let token = try #require(metadata.json()["downloadTokens"]?.stringValue)
        // Name, query, the status both answer.
        let cases: [(String, String, Int)] = [
            ("public/a.jpg", "", 200), ("private/a.jpg", "", 403), ("private/a.jpg", "&token=" + token, 200),
            ("private/a.jpg", "&token=not-the-token", 403), ("public/missing.jpg", "", 404),
        ]
        let targets = cases.map { objectPath($0.0) + "?alt=media&width=64&height=64" + $0.1 }
        let heads = try targets.map { try client.send(method: "HEAD", target: $0) }
        #expect(server.app.thumbnailCounters.transforms == 0)
        for ((target, head), expected) in zip(zip(targets, heads), cases.map(\.2)) {
            let get = try client.send(method: "GET", target: target)
            #expect(head.status == expected, "HEAD \(target)")
            #expect(get.status == expected, "GET \(target)")
            #expect(head.headers["Content-Type"] == get.headers["Content-Type"], "\(target)")
            // An error's body is the same, so is its declared length.
            if expected != 200 { #expect(head.headers["Content-Length"] == get.headers["Content-Length"], "\(target)") }
        }
    }

    /// The socket's thread never transforms: an inline attempt at a thumbnail not yet made is declined to a
    /// worker; once made, it is answered inline from memory, with no transform.
    @Test func inlineAttemptNeverTransforms() throws {
        let workspace = try GoldenImages.workspace()
        let server = try thumbnailServer(.inProcess, cachingMetadata: true)
        let client = server.client()
        #expect(try client.upload("photo.jpg", workspace.jpeg).status == 200)
        // The first read gives the object its download token (a write): on the worker.
        #expect(try client.send(method: "GET", target: objectPath("photo.jpg") + "?alt=media").status == 200)
        let head = HTTPRequestHead(
            method: "GET", target: objectPath("photo.jpg") + "?alt=media&width=64&height=64",
            headers: ["Host": "127.0.0.1"])
        if case .answered = server.app.makeInlineAnswerer()!.beginInline(head) {
            Issue.record("a thumbnail not yet made must not be answered inline")
        }
        #expect(server.app.thumbnailCounters.transforms == 0)
        #expect(try client.thumbnail("photo.jpg", "width=64&height=64").status == 200)
        #expect(server.app.thumbnailCounters.transforms == 1)
        guard case .answered(.respond(let answer)) = server.app.makeInlineAnswerer()!.beginInline(head) else {
            Issue.record("a thumbnail in memory should be answered inline")
            return
        }
        #expect(answer.status == 200)
        #expect(answer.headers["X-Silo-Thumbnail-Cache"] == "hit")
        #expect(server.app.thumbnailCounters.transforms == 1)
    }
}
