import Foundation
import SiloCLI
import SiloHTTP
import SiloTesting
import SiloWire
import Testing

@Suite("Round trips")
struct RoundTripTests {
    @Test func folderTreeUpAndBack() async throws {
        let h = try CLIHarness()
        let files = ["tree/a.bin": 1, "tree/b/c.bin": 70_000, "tree/b/d/e.bin": 300_000, "tree/empty.bin": 0]
        for (name, size) in files { try h.write(name, binaryBytes(size, seed: UInt64(size + 1))) }
        let up = await h.run(["cp", "-r", h.path("tree"), "gs://demo/backup/"])
        #expect(up.code == .success, "\(up.stderr)")
        let listing = await h.run(["ls", "-r", "gs://demo/backup"])
        #expect(
            listing.stdout
                == "gs://demo/backup/tree/a.bin\ngs://demo/backup/tree/b/c.bin\ngs://demo/backup/tree/b/d/e.bin\n"
                + "gs://demo/backup/tree/empty.bin\n")
        let down = await h.run(["cp", "-r", "gs://demo/backup/tree", h.path("restored")])
        #expect(down.code == .success, "\(down.stderr)")
        for (name, _) in files {
            let restored = "restored/" + name.dropFirst("tree/".count)
            #expect(h.read(restored) == h.read(name), "\(name)")
        }
        // Into an existing directory the folder keeps its name.
        try FileManager.default.createDirectory(atPath: h.path("into"), withIntermediateDirectories: true)
        let into = await h.run(["cp", "-r", "gs://demo/backup/tree", h.path("into")])
        #expect(into.code == .success)
        #expect(h.read("into/tree/b/d/e.bin") == h.read("tree/b/d/e.bin"))
    }

    @Test func exportWipeImport() async throws {
        let h = try CLIHarness()
        try h.write("one.txt", Array("one".utf8))
        try h.write("two.bin", binaryBytes(100_000, seed: 2))
        _ = await h.run(["cp", h.path("one.txt"), "gs://alpha/docs/one.txt", "--metadata", "lang=en"])
        _ = await h.run(["cp", h.path("two.bin"), "gs://beta/two.bin", "--content-type", "application/x-two"])
        _ = await h.run(["meta", "set", "gs://beta/two.bin", "--cache-control", "max-age=60"])
        let before = try await snapshot(h, ["gs://alpha/docs/one.txt", "gs://beta/two.bin"])

        let export = await h.run(["export", h.path("export")])
        #expect(export.code == .success, "\(export.stderr)")
        #expect(export.stdout == "exported 2 objects (97.7 KiB) from 2 buckets to \(h.path("export"))\n")
        let fm = FileManager.default
        #expect(fm.fileExists(atPath: h.path("export/firebase-export-metadata.json")))
        let bucketsFile = try #require(h.read("export/storage_export/buckets.json"))
        let buckets = try JSONValue.parse(bucketsFile)
        #expect(
            buckets
                == .object(["buckets": .array([.object(["id": .string("alpha")]), .object(["id": .string("beta")])])]))
        let metadataFiles = try fm.contentsOfDirectory(atPath: h.path("export/storage_export/metadata"))
        #expect(metadataFiles.count == 2)
        let sampleFile = try #require(h.read("export/storage_export/metadata/" + metadataFiles[0]))
        let sample = try #require(try JSONValue.parse(sampleFile).objectValue)
        #expect(sample["crc32c"]?.stringValue?.allSatisfy(\.isNumber) == true)
        #expect(sample["downloadTokens"]?.arrayValue?.count == 1)
        #expect(sample["size"].map { if case .number = $0 { true } else { false } } == true)
        // No temporary directories left beside the export.
        #expect(try fm.contentsOfDirectory(atPath: h.scratch.path).filter { $0.contains(".silo-") }.isEmpty)

        let reset = try h.server.client().send(
            method: "POST", target: "/internal/reset", headers: ["Authorization": "Bearer owner"])
        #expect(reset.status == 200)
        let gone = await h.run(["stat", "gs://beta/two.bin"])
        #expect(gone.code == .failure)

        let imported = await h.run(["import", h.path("export")])
        #expect(imported.code == .success, "\(imported.stderr)")
        #expect(imported.stdout == "imported 2 objects (97.7 KiB) from \(h.path("export"))\n")
        let after = try await snapshot(h, ["gs://alpha/docs/one.txt", "gs://beta/two.bin"])
        #expect(after == before)
        #expect(await h.run(["cat", "gs://beta/two.bin"]).stdoutBytes == h.read("two.bin"))
    }

    @Test func importsEmulatorSeedWithLegacyNamesAndMissingBlobs() async throws {
        let h = try CLIHarness()
        let root = h.path("seed")
        let storage = root + "/storage_export"
        try FileManager.default.createDirectory(atPath: storage + "/metadata/nested", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: storage + "/blobs/nested", withIntermediateDirectories: true)
        try #"{"version":"13.0.0","storage":{"version":"13.0.0","path":"storage_export"}}"#
            .write(toFile: root + "/firebase-export-metadata.json", atomically: true, encoding: .utf8)
        let metadata = """
            {"name":"img/cat.png","bucket":"demo-project.appspot.com","generation":1700000000000,"metageneration":1,\
            "contentType":"image/png","storageClass":"STANDARD","size":4,"md5Hash":"x","crc32c":"123","etag":"e",\
            "timeCreated":"2023-11-14T22:13:20.000Z","updated":"2023-11-14T22:13:20.000Z",\
            "downloadTokens":["tok-1","tok-2"],"customMetadata":{"owner":"bob"},"cacheControl":"public"}
            """
        try metadata.write(
            toFile: storage + "/metadata/nested/demo-project.appspot.com%2Fimg%2Fcat.png.json", atomically: true,
            encoding: .utf8)
        try Data([0x89, 0x50, 0x4E, 0x47]).write(
            to: URL(fileURLWithPath: storage + "/blobs/nested/demo-project.appspot.com%2Fimg%2Fcat.png"))
        try #"{"name":"lost.txt","bucket":"demo-project.appspot.com","downloadTokens":[]}"#
            .write(toFile: storage + "/metadata/lost.json", atomically: true, encoding: .utf8)

        let result = await h.run(["import", root])
        #expect(result.code == .success, "\(result.stderr)")
        #expect(result.stdout == "imported 1 objects (4 B) from \(root); skipped 1\n")
        #expect(result.stderr.contains("skipping gs://demo-project.appspot.com/lost.txt: its blob"))
        let raw = try h.server.client().send(method: "GET", target: "/v0/b/demo-project.appspot.com/o/img%2Fcat.png")
        let object = try #require(try JSONValue.parse(raw.body).objectValue)
        #expect(object["downloadTokens"]?.stringValue == "tok-1,tok-2")
        #expect(object["contentType"]?.stringValue == "image/png")
        #expect(object["cacheControl"]?.stringValue == "public")
        #expect(object["metadata"]?.objectValue?["owner"]?.stringValue == "bob")
        let download = try h.server.client().send(
            method: "GET", target: "/v0/b/demo-project.appspot.com/o/img%2Fcat.png?alt=media&token=tok-2")
        #expect(download.status == 200)
        #expect(download.body == [0x89, 0x50, 0x4E, 0x47])
    }

    @Test func importsAWindowsExportUnderSlashNames() async throws {
        let h = try CLIHarness()
        let root = h.path("windows")
        let storage = root + "/storage_export"
        try FileManager.default.createDirectory(atPath: storage + "/metadata", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: storage + "/blobs", withIntermediateDirectories: true)
        // Copied from Windows: the separators are `\`, literal in Linux file names and in the object name.
        let flat = #"demo-project.appspot.com\test-directory\test_nested_upload.jpg"#
        try
            #"{"name":"test-directory\\test_nested_upload.jpg","bucket":"demo-project.appspot.com","downloadTokens":["t"]}"#
            .write(toFile: storage + "/metadata/" + flat + ".json", atomically: true, encoding: .utf8)
        try Data("jpg".utf8).write(to: URL(fileURLWithPath: storage + "/blobs/" + flat))
        let result = await h.run(["import", root])
        #expect(result.code == .success, "\(result.stderr)")
        let raw = try h.server.client().send(
            method: "GET", target: "/v0/b/demo-project.appspot.com/o/test-directory%2Ftest_nested_upload.jpg?alt=media")
        #expect(raw.status == 200 && raw.body == Array("jpg".utf8))
    }

    /// The fields an export must carry over, from the raw v0 metadata.
    private func snapshot(_ h: CLIHarness, _ urls: [String]) async throws -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        for url in urls {
            let path = url.dropFirst("gs://".count)
            let slash = path.firstIndex(of: "/")!
            let bucket = path[..<slash]
            let name = path[path.index(after: slash)...].replacingOccurrences(of: "/", with: "%2F")
            let raw = try h.server.client().send(method: "GET", target: "/v0/b/\(bucket)/o/\(name)")
            let object = try #require(try JSONValue.parse(raw.body).objectValue)
            var fields: [String: String] = [:]
            for key in [
                "name", "bucket", "size", "contentType", "md5Hash", "downloadTokens", "cacheControl",
                "contentDisposition",
            ] {
                fields[key] = object[key]?.stringValue
            }
            fields["metadata"] = object["metadata"].map { JSONValue.array([$0]).serializedString }
            result[url] = fields
        }
        return result
    }
}
