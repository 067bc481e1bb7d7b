import Foundation
import SiloCLI
import SiloCore
import SiloTestStores
import SiloTesting

/// One in-process run of `silo`.
struct RunResult {
    var code: ExitCode
    var stdout: String
    var stderr: String
    var stdoutBytes: [UInt8]
}

/// A live server with `private/` denied, plus a scratch directory and an environment that points the CLI at it
/// (HOME is the scratch directory, so no real config file is read).
final class CLIHarness {
    let server: TestServer
    let scratch: TemporaryDirectory
    var environment: [String: String]

    init() throws {
        server = try TestServer(policy: DenyPrivate())
        scratch = try TemporaryDirectory()
        environment = ["HOME": scratch.path, "SILO_ENDPOINT": "http://127.0.0.1:\(server.port)"]
    }

    deinit { server.shutdown() }

    var endpoint: String { "http://127.0.0.1:\(server.port)" }

    func run(_ arguments: [String], environment extra: [String: String] = [:], terminal: Bool = false) async
        -> RunResult
    {
        let out = OutputBuffer(isTerminal: terminal)
        let err = OutputBuffer()
        let code = await CLI.main(
            arguments: arguments, stdout: out, stderr: err,
            environment: environment.merging(extra) { $1 })
        return RunResult(code: code, stdout: out.text, stderr: err.text, stdoutBytes: out.data)
    }

    func path(_ relative: String) -> String { scratch.path + "/" + relative }

    func write(_ relative: String, _ bytes: [UInt8]) throws {
        let url = URL(fileURLWithPath: path(relative))
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
    }

    func read(_ relative: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path(relative)).map { Array($0) }
    }
}

/// Runs without a server: HOME in a scratch directory.
func runCLI(_ arguments: [String], environment: [String: String] = [:]) async throws -> RunResult {
    let scratch = try TemporaryDirectory()
    let out = OutputBuffer()
    let err = OutputBuffer()
    let code = await CLI.main(
        arguments: arguments, stdout: out, stderr: err, environment: ["HOME": scratch.path].merging(environment) { $1 })
    return RunResult(code: code, stdout: out.text, stderr: err.text, stdoutBytes: out.data)
}

struct DenyPrivate: AccessPolicy {
    func allows(_ request: AccessRequest) -> Bool { !request.path.hasPrefix("private") }
}

/// Deterministic pseudo-random bytes (all 256 values appear).
func binaryBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 6_364_136_223_846_793_005 &+ 1
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}
