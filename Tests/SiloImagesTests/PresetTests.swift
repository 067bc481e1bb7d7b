import Foundation
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTesting
import SiloWire
import Synchronization
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

    /// The storage events recorded so far, oldest first, as "kind name".
    private func events(_ server: ThumbnailHarness) throws -> [String] {
        let now = Timestamp.now()
        let events = try server.server.metadata.claimEvents(
            owner: "test", now: now, leaseUntil: Timestamp(microseconds: now.microseconds + 60_000_000), limit: 100)
        return events.sorted { $0.sequence < $1.sequence }.map { "\($0.event.kind) \($0.event.object.name)" }
    }

    /// A saved job the server stopped short of — before its first thumbnail (0) or between its two (1) — runs when a
    /// server starts again over the same stores and directories: each thumbnail is written once, with one event, and
    /// the job's file goes. The first server is held in its transform for good, as a crashed one never goes on.
    @Test(arguments: [0, 1]) func aJobCutShortRunsOnceAfterARestart(writtenBeforeTheStop: Int) async throws {
        let workspace = try GoldenImages.workspace()
        let preset = try ThumbnailPreset(
            pattern: "photos/**", sizes: [try ThumbnailSize("64x64"), try ThumbnailSize("128x96")])
        let gate = GatedTransformer()
        defer { gate.stop() }
        let first = try thumbnailServer(presets: [preset], transformer: gate, recordsEvents: true)
        #expect(try first.client().upload("photos/cat.jpg", workspace.jpeg).status == 200)
        // Saved before the upload answered.
        #expect(first.presetJobFiles.count == 1)
        gate.open(writtenBeforeTheStop)
        #expect(await eventually { gate.arrived.load(ordering: .relaxed) == writtenBeforeTheStop + 1 })
        #expect(first.app.thumbnailCounters.presetWrites == writtenBeforeTheStop)
        first.server.shutdown()

        let second = try thumbnailServer(presets: [preset], restarting: first)
        #expect(second.presetJobFiles.count == 1)
        #expect(second.app.resumeThumbnailPresets() == 1)
        second.app.drainThumbnailPresets()
        #expect(second.app.resumeThumbnailPresets() == 0)
        #expect(second.app.thumbnailCounters.presetWrites == 2 - writtenBeforeTheStop)
        #expect(second.app.thumbnailCounters.transforms == 2 - writtenBeforeTheStop)
        #expect(second.presetJobFiles.isEmpty)

        // Had the first server gone on, it would have written nothing more.
        gate.stop()
        first.app.drainThumbnailPresets()
        let seen = try events(second)
        #expect(seen.first == "finalize photos/cat.jpg")
        #expect(
            Set(seen.dropFirst())
                == ["finalize photos/thumbnails/cat_64x64.jpg", "finalize photos/thumbnails/cat_128x96.jpg"])
        #expect(seen.count == 3, "\(seen)")
        let client = second.client()
        for name in ["cat_64x64.jpg", "cat_128x96.jpg"] {
            let metadata = try client.send(
                method: "GET", target: objectPath("photos/thumbnails/" + name), headers: admin
            ).json()
            #expect(metadata["metageneration"]?.stringValue == "1")
            #expect(metadata["metadata"]?.objectValue?["resizedImage"]?.stringValue == "true")
        }
    }

    /// Job files found at startup: one for the live version runs (by its generation, and the one saved before its
    /// commit, by its blob: together they write the thumbnail once); one for a version overwritten since, one for an
    /// object deleted since, one saved before a commit that never happened and one that does not parse are deleted
    /// without writing anything.
    @Test func leftoverJobsRunOnlyForTheLiveVersion() throws {
        let workspace = try GoldenImages.workspace()
        let preset = try ThumbnailPreset(pattern: "photos/**", sizes: [try ThumbnailSize("64x64")])
        // Uploads with no presets, so the jobs below are the only ones.
        let first = try thumbnailServer(recordsEvents: true)
        let client = first.client()
        func generation(_ response: TestResponse) throws -> Int64 {
            try #require(response.json()["generation"]?.stringValue.flatMap { Int64($0) })
        }
        let replaced = try generation(try client.upload("photos/a.jpg", workspace.jpeg))
        let live = try generation(try client.upload("photos/a.jpg", workspace.jpeg))
        let deleted = try generation(try client.upload("photos/b.jpg", workspace.jpeg))
        #expect(try client.send(method: "DELETE", target: objectPath("photos/b.jpg"), headers: admin).status == 204)
        _ = try events(first)
        let directory = first.cache.path + "/preset-jobs"
        let jobs: [(String, String, Int64)] = [
            ("replaced", "photos/a.jpg", replaced), ("live", "photos/a.jpg", live),
            ("deleted", "photos/b.jpg", deleted),
        ]
        for (file, name, generation) in jobs {
            let text = #"{"bucket":"\#(bucket)","name":"\#(name)","generation":"\#(generation)"}"#
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + file + ".job"))
        }
        let liveBlob = try #require(
            try first.server.metadata.object(try BucketName(bucket), try ObjectName("photos/a.jpg"), generation: nil)?
                .blobID)
        for (file, blob) in [
            ("intent-live", liveBlob.rawValue), ("intent-uncommitted", String(repeating: "ab", count: 16)),
        ] {
            let text = #"{"bucket":"\#(bucket)","name":"photos/a.jpg","generation":"0","blob":"\#(blob)"}"#
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + file + ".job"))
        }
        try Data("not a job".utf8).write(to: URL(fileURLWithPath: directory + "/torn.job"))
        try Data("{".utf8).write(to: URL(fileURLWithPath: directory + "/unfinished.job.123.tmp"))

        let second = try thumbnailServer(presets: [preset], restarting: first)
        #expect(
            second.presetJobFiles == [
                "deleted.job", "intent-live.job", "intent-uncommitted.job", "live.job", "replaced.job",
            ])
        #expect(second.app.resumeThumbnailPresets() == 5)
        second.app.drainThumbnailPresets()
        #expect(second.app.thumbnailCounters.presetWrites == 1)
        #expect(second.app.thumbnailCounters.transforms == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        #expect(try events(second) == ["finalize photos/thumbnails/a_64x64.jpg"])
        let metadata = try second.client().send(
            method: "GET", target: objectPath("photos/thumbnails/a_64x64.jpg"), headers: admin
        ).json()
        #expect(metadata["metadata"]?.objectValue?["resizedImageSourceGeneration"]?.stringValue == "\(live)")
    }

    /// The job is saved before the commit; an upload whose commit fails (a generation precondition) leaves no job
    /// behind and none pending.
    @Test func aFailedCommitLeavesNoJob() throws {
        let workspace = try GoldenImages.workspace()
        let preset = try ThumbnailPreset(pattern: "photos/**", sizes: [try ThumbnailSize("64x64")])
        let server = try thumbnailServer(presets: [preset])
        // The bucket first (a v0 upload makes it; no preset applies to text).
        #expect(try server.client().upload("notes.txt", Array("x".utf8), contentType: "text/plain").status == 200)
        let headers: HTTPHeaders = ["Authorization": "Bearer owner", "Content-Type": "image/jpeg"]
        let refused = try server.client().send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=photos/cat.jpg&ifGenerationMatch=12345",
            headers: headers, body: workspace.jpeg)
        #expect(refused.status == 412)
        #expect(server.presetJobFiles.isEmpty)
        #expect(server.app.thumbnailCounters.presetsDropped == 0)
        let metrics = try server.client().send(method: "GET", target: "/metrics", headers: admin)
        #expect(
            String(decoding: metrics.body, as: UTF8.self).split(separator: "\n")
                .contains("silo_thumbnail_preset_jobs_pending 0"))
    }

    /// Past `maxPendingPresetJobs` waiting, an upload gets no job (no file either), and it is counted.
    @Test func uploadsPastTheJobBoundAreDroppedAndCounted() async throws {
        let workspace = try GoldenImages.workspace()
        let preset = try ThumbnailPreset(pattern: "photos/**", sizes: [try ThumbnailSize("64x64")])
        let gate = GatedTransformer()
        defer { gate.stop() }
        let server = try thumbnailServer(presets: [preset], transformer: gate, maxPendingPresetJobs: 1)
        let client = server.client()
        #expect(try client.upload("photos/a.jpg", workspace.jpeg).status == 200)
        #expect(await eventually { gate.arrived.load(ordering: .relaxed) == 1 })
        #expect(try client.upload("photos/b.jpg", workspace.jpeg).status == 200)
        #expect(server.app.thumbnailCounters.presetsDropped == 1)
        #expect(server.presetJobFiles.count == 1)
        let metrics = try client.send(method: "GET", target: "/metrics", headers: admin)
        let lines = String(decoding: metrics.body, as: UTF8.self).split(separator: "\n")
        #expect(lines.contains("silo_thumbnail_preset_jobs_dropped_total 1"))
        #expect(lines.contains("silo_thumbnail_preset_jobs_pending 1"))
        gate.open()
        server.app.drainThumbnailPresets()
        #expect(try names(client, prefix: "photos/thumbnails/") == ["photos/thumbnails/a_64x64.jpg"])
        #expect(server.presetJobFiles.isEmpty)
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
