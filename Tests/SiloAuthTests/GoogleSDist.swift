import Foundation
import SiloTesting
import SiloWire

/// google-cloud-storage's V4 signing test vectors (`tests/unit/url_signer_v4_test_data.json` and the service account
/// they were signed with, `url_signer_v4_test_account.json`), read from its PyPI sdist, which is downloaded at test
/// time with pip into `.build/test-downloads` and never committed. `SILO_GCS_SDIST` may name a downloaded sdist
/// (`.tar.gz`) instead. A machine that cannot fetch it fails these tests, saying so.
enum GoogleSDist {
    static let version = "3.17.1"
    static let dataFile = "tests/unit/url_signer_v4_test_data.json"
    static let accountFile = "tests/unit/url_signer_v4_test_account.json"

    struct Files {
        let vectors: JSONObject
        let accountJSON: [UInt8]
    }

    /// Loaded once per test process.
    static let files: Result<Files, SDistError> = load()

    struct SDistError: Error, CustomStringConvertible {
        let description: String
    }

    private static func load() -> Result<Files, SDistError> {
        do {
            let archive = try ProcessInfo.processInfo.environment["SILO_GCS_SDIST"] ?? download()
            let data = try extract(dataFile, from: archive)
            let account = try extract(accountFile, from: archive)
            // The data file starts with a UTF-8 byte order mark.
            let text = data.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(data.dropFirst(3)) : data
            guard let vectors = try JSONValue.parse(text).objectValue else {
                throw SDistError(description: "\(dataFile) is not a JSON object")
            }
            return .success(Files(vectors: vectors, accountJSON: account))
        } catch let error as SDistError {
            return .failure(error)
        } catch {
            return .failure(SDistError(description: "\(error)"))
        }
    }

    /// `pip download --no-binary :all: --no-deps google-cloud-storage==VERSION` into `.build/test-downloads`.
    private static func download() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let directory = root.appendingPathComponent(".build/test-downloads").path
        let archive = "\(directory)/google_cloud_storage-\(version).tar.gz"
        if FileManager.default.fileExists(atPath: archive) { return archive }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (status, _, output) = run(
            "/usr/bin/env",
            [
                "python3", "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                "--no-binary", ":all:", "google-cloud-storage==\(version)", "-d", directory,
            ])
        guard status == 0, FileManager.default.fileExists(atPath: archive) else {
            throw SDistError(
                description:
                    "cannot download google-cloud-storage \(version)'s sdist with pip (the V4 signing vectors come from "
                    + "it; set SILO_GCS_SDIST to a downloaded copy): \(output.suffix(600))")
        }
        return archive
    }

    private static func extract(_ member: String, from archive: String) throws -> [UInt8] {
        let (status, contents, errors) = run(
            "/usr/bin/env", ["tar", "-xzOf", archive, "google_cloud_storage-\(version)/\(member)"])
        guard status == 0 else { throw SDistError(description: "cannot read \(member) from \(archive): \(errors)") }
        return contents
    }

    /// Runs `tool`; its exit status, standard output and standard error.
    private static func run(_ tool: String, _ arguments: [String]) -> (Int32, [UInt8], String) {
        guard let result = try? ChildProcess.run(tool, arguments) else { return (-1, [], "\(tool) did not start") }
        return (result.status, Array(result.output), result.errorText)
    }
}
