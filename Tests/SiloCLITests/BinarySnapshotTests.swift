import Foundation
import SiloTesting
import Testing

/// The real binary: full stdout, stderr and exit status compared with recorded snapshots.
@Suite("silo binary snapshots", .enabled(if: SiloBinary.path != nil, "\(SiloBinary.missingMessage)"))
struct BinarySnapshotTests {
    static let cases: [(name: String, arguments: [String])] = [
        ("help", ["--help"]),
        ("cp-help", ["cp", "--help"]),
        ("ls-help", ["ls", "--help"]),
        ("meta-set-help", ["meta", "set", "--help"]),
        ("export-help", ["export", "--help"]),
        ("serve-help", ["serve", "--help"]),
        ("serve-print-config", ["serve", "--print-config", "--port", "9300", "--bucket", "a.appspot.com"]),
        ("serve-bad-option", ["serve", "--prot", "9300"]),
        ("serve-test-faults-exposed", ["serve", "--host", "0.0.0.0", "--test-faults", "--insecure-allow-all"]),
        ("typo-command", ["cpp", "a", "gs://b/a"]),
        ("typo-option", ["ls", "--jsn", "gs://b"]),
        ("unreachable", ["stat", "gs://b/x", "--endpoint", "http://127.0.0.1:1"]),
        ("rules-check-errors", ["rules", "check", "broken.rules"]),
    ]

    @Test(arguments: cases.map(\.name))
    func snapshot(_ name: String) throws {
        let arguments = Self.cases.first { $0.name == name }!.arguments
        let scratch = try TemporaryDirectory()
        try "service firebase.storage {\n  match /b/{bucket}/o {\n    allow write: if request.auth.uid ==;\n  }\n}\n"
            .write(toFile: scratch.path + "/broken.rules", atomically: true, encoding: .utf8)
        let result = try SiloBinary.run(arguments, directory: scratch.path)
        let actual = Snapshots.render(
            arguments: arguments, code: result.code, stdout: result.stdout, stderr: result.stderr)
        if let expected = try Snapshots.expected(name, actual: actual) {
            #expect(actual == expected)
        }
    }
}
