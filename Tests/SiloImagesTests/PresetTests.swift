import SiloCore
import SiloHTTP
import SiloServer
import SiloTesting
import SiloWire
import Testing

@Suite("Thumbnail presets")
struct PresetTests {
    private func names(_ client: HTTPTestClient, prefix: String) throws -> [String] {
        let listing = try client.send(
            method: "GET", target: "/v0/b/\(bucket)/o?prefix=" + PercentCoding.encodeComponent(prefix), headers: admin)
        return (try listing.json()["items"]?.arrayValue ?? []).compactMap { $0.objectValue?["name"]?.stringValue }
    }

    /// An upload under the pattern gets one thumbnail per size, beside it, each with a download token; the
    /// thumbnails (under `**`, so the pattern matches them too) are not processed again.
    @Test func writesEachThumbnailOnce() throws {
        let workspace = try GoldenImages.workspace()
        let preset = try ThumbnailPreset(
            pattern: "photos/**", sizes: [try ThumbnailSize("64x64"), try ThumbnailSize("128x96")])
        let server = try thumbnailServer(presets: [preset])
        let client = server.client()
        #expect(try client.upload("photos/2026/cat.jpg", workspace.jpeg).status == 200)
        #expect(try client.upload("photos/notes.txt", Array("text".utf8), contentType: "text/plain").status == 200)
        #expect(try client.upload("elsewhere/dog.jpg", workspace.jpeg).status == 200)
        server.app.drainThumbnailPresets()
        server.app.drainThumbnailPresets()

        #expect(
            try names(client, prefix: "photos/2026/thumbnails/") == [
                "photos/2026/thumbnails/cat_128x96.jpg", "photos/2026/thumbnails/cat_64x64.jpg",
            ])
        #expect(try names(client, prefix: "elsewhere/thumbnails/").isEmpty)
        #expect(try names(client, prefix: "photos/thumbnails/").isEmpty)
        #expect(server.app.thumbnailCounters.presetWrites == 2)
        #expect(server.app.thumbnailCounters.transforms == 2)

        for (name, size) in [("cat_64x64.jpg", (64, 48)), ("cat_128x96.jpg", (128, 96))] {
            let path = objectPath("photos/2026/thumbnails/" + name)
            let metadata = try client.send(method: "GET", target: path, headers: admin).json()
            #expect(metadata["generation"]?.stringValue != nil)
            #expect(metadata["metageneration"]?.stringValue == "1")
            #expect(metadata["contentType"]?.stringValue == "image/jpeg")
            let token = try #require(metadata["downloadTokens"]?.stringValue)
            let media = try client.send(method: "GET", target: path + "?alt=media&token=" + token)
            #expect(media.status == 200)
            #expect(GoldenImages.hasMagic(media.body, of: .jpeg))
            let file = try GoldenImages.write(media.body, "preset-\(name)", in: workspace)
            #expect(try GoldenImages.dimensions(file) == size)
        }
    }

    /// The storage events of an upload with presets: one `finalize` for the original and one per thumbnail, nothing
    /// else (no `metadataUpdate` for the thumbnails' download tokens, which they are written with); with
    /// `deleteOriginal`, one `delete` of the original after its thumbnails.
    @Test(arguments: [false, true]) func sendsOneEventPerThumbnail(deleteOriginal: Bool) throws {
        let workspace = try GoldenImages.workspace()
        let preset = try ThumbnailPreset(
            pattern: "photos/**", sizes: [try ThumbnailSize("64x64"), try ThumbnailSize("128x96")],
            deleteOriginal: deleteOriginal)
        let server = try thumbnailServer(presets: [preset], recordsEvents: true)
        #expect(try server.client().upload("photos/cat.jpg", workspace.jpeg).status == 200)
        server.app.drainThumbnailPresets()
        server.app.drainThumbnailPresets()
        let now = Timestamp.now()
        let events = try server.server.metadata.claimEvents(
            owner: "test", now: now, leaseUntil: Timestamp(microseconds: now.microseconds + 60_000_000), limit: 100)
        let seen = events.sorted { $0.sequence < $1.sequence }.map { "\($0.event.kind) \($0.event.object.name)" }
        let thumbnails = Set(["finalize photos/thumbnails/cat_64x64.jpg", "finalize photos/thumbnails/cat_128x96.jpg"])
        #expect(seen.first == "finalize photos/cat.jpg")
        #expect(Set(seen.dropFirst().prefix(2)) == thumbnails)
        #expect(seen.count == (deleteOriginal ? 4 : 3), "\(seen)")
        if deleteOriginal { #expect(seen.last == "delete photos/cat.jpg") }
    }

    /// `deleteOriginal`: the original goes once every thumbnail is written.
    @Test func deletesTheOriginalWhenAsked() throws {
        let workspace = try GoldenImages.workspace()
        let preset = try ThumbnailPreset(
            pattern: "inbox/*.jpg", sizes: [try ThumbnailSize("64x64")], format: .webp, deleteOriginal: true)
        let server = try thumbnailServer(presets: [preset])
        let client = server.client()
        #expect(try client.upload("inbox/cat.jpg", workspace.jpeg).status == 200)
        server.app.drainThumbnailPresets()
        #expect(try names(client, prefix: "inbox/") == ["inbox/thumbnails/cat_64x64.webp"])
        #expect(try client.send(method: "GET", target: objectPath("inbox/cat.jpg"), headers: admin).status == 404)
    }

    @Test func thumbnailNames() throws {
        let size = try ThumbnailSize("200x100")
        let cases: [(String, String)] = [
            ("a/b/cat.jpg", "a/b/thumbnails/cat_200x100.webp"), ("cat", "thumbnails/cat_200x100.webp"),
            ("a/.hidden", "a/thumbnails/.hidden_200x100.webp"), ("a/x.tar.gz", "a/thumbnails/x.tar_200x100.webp"),
        ]
        for (original, expected) in cases {
            #expect(
                try ThumbnailPreset.thumbnailName(try ObjectName(original), size, .webp).rawValue == expected,
                "\(original)")
        }
    }

    @Test func settingsFileParses() throws {
        let text = """
            {"maxInputPixels": 1000000, "cacheBytes": 1048576, "maxConcurrentTransforms": 3,
             "buckets": {"demo.appspot.com": {"sizes": ["256x256", "64x64"], "formats": ["webp", "jpg"],
               "presets": [{"path": "uploads/**", "sizes": ["200x200"], "fit": "cover", "deleteOriginal": true}]}}}
            """
        let settings = try ImageSettings.parse(json: Array(text.utf8))
        #expect(settings.limits.maxInputPixels == 1_000_000)
        #expect(settings.cacheBytes == 1 << 20)
        #expect(settings.maxConcurrentTransforms == 3)
        let demo = try #require(settings.buckets[try BucketName(bucket)])
        #expect(demo.sizes == [try ThumbnailSize("256x256"), try ThumbnailSize("64x64")])
        #expect(demo.formats == [.webp, .jpeg])
        #expect(demo.presets.first?.deleteOriginal == true)
        #expect(demo.presets.first?.fit == .cover)
        for bad in [
            #"{"buckets": {"demo.appspot.com": {"sizes": ["0x10"]}}}"#,
            #"{"buckets": {"demo.appspot.com": {"sizes": ["99999x10"]}}}"#,
            #"{"buckets": {"demo.appspot.com": {"presets": [{"sizes": ["10x10"]}]}}}"#,
            #"{"maxConcurrentTransforms": 0}"#, "[]",
        ] {
            #expect(throws: StorageError.self, "\(bad)") { try ImageSettings.parse(json: Array(bad.utf8)) }
        }
    }
}
