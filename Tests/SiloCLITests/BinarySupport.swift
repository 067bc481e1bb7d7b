import Foundation
import SiloTesting

/// The built `silo` executable, found next to the test bundle's build products (`.build/<config>/silo`).
enum SiloBinary {
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    static var path: String? {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("silo").path,
            packageRoot.appendingPathComponent(".build/debug/silo").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let missingMessage = "the silo binary is not built; run 'swift build --product silo' first"

    /// Runs the binary with a clean environment (HOME in a scratch directory, no SILO_* variables).
    static func run(_ arguments: [String], directory: String, environment extra: [String: String] = [:]) throws
        -> (code: Int32, stdout: String, stderr: String)
    {
        guard let path else { throw BinaryMissing() }
        let result = try ChildProcess.run(
            path, arguments, environment: ["HOME": directory, "PATH": "/usr/bin:/bin"].merging(extra) { $1 },
            directory: directory)
        return (result.status, result.outputText, result.errorText)
    }
}

struct BinaryMissing: Error, CustomStringConvertible {
    var description: String { SiloBinary.missingMessage }
}

/// Recorded expectations under Tests/SiloCLITests/Snapshots/, re-recorded with `RECORD_SNAPSHOTS=1`.
enum Snapshots {
    static var directory: URL { SiloBinary.packageRoot.appendingPathComponent("Tests/SiloCLITests/Snapshots") }
    static var recording: Bool { ProcessInfo.processInfo.environment["RECORD_SNAPSHOTS"] == "1" }

    static func render(arguments: [String], code: Int32, stdout: String, stderr: String) -> String {
        "$ silo \(arguments.joined(separator: " "))\nexit: \(code)\n--- stdout\n\(stdout)--- stderr\n\(stderr)"
    }

    /// The recorded text for `name`, or nil (after writing `actual`) when recording.
    static func expected(_ name: String, actual: String) throws -> String? {
        let file = directory.appendingPathComponent(name + ".txt")
        if recording {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(actual.utf8).write(to: file)
            return nil
        }
        guard let data = FileManager.default.contents(atPath: file.path) else {
            return "(no snapshot at \(file.path); run with RECORD_SNAPSHOTS=1)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
