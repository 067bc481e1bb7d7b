import Foundation
import SiloStorage
import SiloTesting
import Testing

/// Runs the SiloSeedSamples program (the seed guides' Swift samples as top-level code, Sources/SiloSeedSamples) against
/// a live Silo. That it was built at all is the compile check; here it must also behave as the samples say.
@Suite(.timeLimit(.minutes(3))) struct SeedTopLevelTests {
    /// Next to the test bundle in the build directory (`swift build --build-tests` builds every executable).
    static var program: URL? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
        ]
        return candidates.map { $0.appendingPathComponent("SiloSeedSamples") }.first {
            FileManager.default.isExecutableFile(atPath: $0.path)
        }
    }

    @Test func topLevelSamplesBehaveAsWritten() async throws {
        let program = try #require(Self.program, "SiloSeedSamples was not built next to the tests")
        let live = try Live()
        let root = live.storage.reference()
        for name in ["images/island.jpg", "images/stars.jpg", "images/forest.jpg"] {
            _ = try await root.child(name).putDataAsync(pattern(64 * 1024))
        }
        _ = try await root.child("images/mountains.jpg").putDataAsync(pattern(8 << 20))

        let process = Process()
        process.executableURL = program
        var environment = ProcessInfo.processInfo.environment
        environment["FIREBASE_STORAGE_BUCKET"] = "demo.appspot.com"
        environment["FIREBASE_STORAGE_EMULATOR_HOST"] = "127.0.0.1:\(live.server.port)"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        let lines = text.split(separator: "\n").map(String.init)
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(!lines.contains { $0.hasPrefix("FAIL") }, "\(text)")
        // Every sample reported; `full example: error switch` is the Firebase guide's NSError switch running on Linux.
        for check in [
            "pathReference", "gsReference", "httpsReference", "download in memory", "download to a local file",
            "local file content", "download URL", "FirebaseUI image", "manage downloads: cancelled", "monitor progress",
            "removed observers", "full example: error switch", "get metadata", "update metadata",
            "delete a metadata property", "custom metadata dictionary",
        ] {
            #expect(lines.contains("ok \(check)"), "\(check) missing from:\n\(text)")
        }
    }
}
