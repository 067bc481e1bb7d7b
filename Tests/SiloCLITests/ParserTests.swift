import Foundation
import SiloCLI
import SiloTesting
import Testing

@Suite("Argument parsing")
struct ParserTests {
    @Test func helpOnEveryCommand() async throws {
        for arguments in [
            ["--help"], ["help"], ["cp", "--help"], ["ls", "-h"], ["meta", "--help"], ["meta", "set", "--help"],
            ["meta", "unset", "-h"], ["rules", "check", "--help"], ["help", "export"], ["import", "--help"],
            ["stat", "--help"], ["cat", "--help"], ["rm", "--help"], ["url", "--help"], ["token", "--help"],
        ] {
            let result = try await runCLI(arguments)
            #expect(result.code == .success, "\(arguments)")
            #expect(result.stdout.hasPrefix("OVERVIEW: "), "\(arguments)")
            #expect(result.stdout.contains("USAGE: silo"), "\(arguments)")
            #expect(result.stderr.isEmpty)
        }
    }

    @Test func unknownCommandSuggests() async throws {
        let result = try await runCLI(["lss", "gs://b"])
        #expect(result.code == .usage)
        #expect(result.stderr == "silo: unknown command 'lss'; did you mean 'ls'? (see 'silo --help')\n")
    }

    @Test func unknownOptionSuggests() async throws {
        let result = try await runCLI(["cp", "--recursiv", "a", "gs://b/a"])
        #expect(result.code == .usage)
        #expect(
            result.stderr
                == "silo cp: unknown option '--recursiv'; did you mean '--recursive'? (see 'silo cp --help')\n")
        let short = try await runCLI(["ls", "-z", "gs://b"])
        #expect(short.code == .usage)
        #expect(short.stderr.hasPrefix("silo ls: unknown option '-z'"))
    }

    @Test func missingAndExtraArguments() async throws {
        let missing = try await runCLI(["stat"])
        #expect(missing.code == .usage)
        #expect(missing.stderr == "silo stat: missing URL (see 'silo stat --help')\n")
        let extra = try await runCLI(["url", "gs://b/x", "gs://b/y"])
        #expect(extra.code == .usage)
        #expect(extra.stderr.contains("unexpected argument 'gs://b/y'"))
        let value = try await runCLI(["cat", "gs://b/x", "--range"])
        #expect(value.code == .usage)
        #expect(value.stderr.contains("--range needs a value (A-B)"))
        let group = try await runCLI(["meta"])
        #expect(group.code == .usage)
        #expect(group.stderr.contains("missing subcommand (one of: set, unset)"))
    }

    @Test func validationIsUsageError() async throws {
        let range = try await runCLI(["cat", "--range", "9-3", "gs://b/x"])
        #expect(range.code == .usage)
        #expect(range.stderr.contains("--range must be A-B"))
        let local = try await runCLI(["cp", "a", "b"])
        #expect(local.code == .usage)
        #expect(local.stderr.contains("one side must be gs://"))
        let endpoint = try await runCLI(["ls", "gs://b", "--endpoint", "ftp://x"])
        #expect(endpoint.code == .usage)
    }

    @Test func doubleDashEndsOptions() async throws {
        // After `--`, "-r" is a file name, not the flag.
        let result = try await runCLI(["cp", "--", "-r", "gs://b/x"])
        #expect(result.code == .failure)
        #expect(result.stderr == "silo: no such file or directory: -r\n")
    }

    @Test func inlineValuesAndClusters() async throws {
        let inline = try await runCLI(["cat", "--range=1-2", "gs://b/x", "--endpoint=http://127.0.0.1:1"])
        #expect(inline.code == .failure)
        #expect(inline.stderr == "silo: cannot reach http://127.0.0.1:1: connection refused\n")
        let cluster = try await runCLI(["ls", "-lr", "gs://b", "--endpoint", "http://127.0.0.1:1"])
        #expect(cluster.stderr == "silo: cannot reach http://127.0.0.1:1: connection refused\n")
    }

    @Test func precedenceFlagThenEnvironmentThenConfig() async throws {
        let scratch = try TemporaryDirectory()
        let config = scratch.path + "/config"
        try "# silo\nendpoint = http://127.0.0.1:3\n".write(toFile: config, atomically: true, encoding: .utf8)
        let fromConfig = try await runCLI(["ls", "gs://b", "--config", config])
        #expect(fromConfig.stderr == "silo: cannot reach http://127.0.0.1:3: connection refused\n")
        let fromEnvironment = try await runCLI(
            ["ls", "gs://b", "--config", config], environment: ["SILO_ENDPOINT": "http://127.0.0.1:2"])
        #expect(fromEnvironment.stderr == "silo: cannot reach http://127.0.0.1:2: connection refused\n")
        let fromFlag = try await runCLI(
            ["ls", "gs://b", "--config", config, "--endpoint", "http://127.0.0.1:1"],
            environment: ["SILO_ENDPOINT": "http://127.0.0.1:2"])
        #expect(fromFlag.stderr == "silo: cannot reach http://127.0.0.1:1: connection refused\n")
        // The default config file location.
        let home = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: home.path + "/.config/silo", withIntermediateDirectories: true)
        try "endpoint=http://127.0.0.1:4".write(
            toFile: home.path + "/.config/silo/config", atomically: true, encoding: .utf8)
        let fromHome = try await runCLI(["ls", "gs://b"], environment: ["HOME": home.path])
        #expect(fromHome.stderr == "silo: cannot reach http://127.0.0.1:4: connection refused\n")
    }

    @Test func badConfigFile() async throws {
        let scratch = try TemporaryDirectory()
        let config = scratch.path + "/config"
        try "endpoint http://x\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try await runCLI(["ls", "gs://b", "--config", config])
        #expect(result.code == .usage)
        #expect(result.stderr.contains("\(config):1: expected 'key = value'"))
        let missing = try await runCLI(["ls", "gs://b", "--config", scratch.path + "/nope"])
        #expect(missing.code == .usage)
        #expect(missing.stderr.contains("cannot read config file"))
    }

    @Test func configFileParsing() throws {
        let file = try ConfigFile(
            path: "c", text: "# comment\n\n port = 9200 \nbucket=a\nbucket = b\nname = \" spaced \"\n")
        #expect(file.values(for: "port") == ["9200"])
        #expect(file.values(for: "bucket") == ["a", "b"])
        #expect(file.values(for: "name") == [" spaced "])
    }
}
