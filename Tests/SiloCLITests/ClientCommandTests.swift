import Foundation
import SiloCLI
import SiloTesting
import SiloWire
import Testing

@Suite("Client commands against a live server")
struct ClientCommandTests {
    @Test func uploadStatCatAndDownload() async throws {
        let h = try CLIHarness()
        let bytes = binaryBytes(70_000, seed: 1)
        try h.write("photo.bin", bytes)
        let up = await h.run([
            "cp", h.path("photo.bin"), "gs://demo/pics/", "--content-type", "image/x-test", "--metadata", "owner=ann",
        ])
        #expect(up.code == .success, "\(up.stderr)")
        #expect(up.stdout.isEmpty)  // not a terminal: no progress bar

        let stat = await h.run(["stat", "gs://demo/pics/photo.bin"])
        #expect(stat.code == .success)
        #expect(stat.stdout.contains("    Size:                 70000\n"))
        #expect(stat.stdout.contains("    Content-Type:         image/x-test\n"))
        #expect(stat.stdout.contains("    Metadata owner:       ann\n"))

        let json = await h.run(["stat", "--json", "gs://demo/pics/photo.bin"])
        let object = try #require(try JSONValue.parse(json.stdout).objectValue)
        #expect(object["size"]?.int64Value == 70_000)
        #expect(object["contentType"]?.stringValue == "image/x-test")
        #expect(object["metadata"]?.objectValue?["owner"]?.stringValue == "ann")

        let cat = await h.run(["cat", "gs://demo/pics/photo.bin"])
        #expect(cat.stdoutBytes == bytes)
        let range = await h.run(["cat", "--range", "10-19", "gs://demo/pics/photo.bin"])
        #expect(range.stdoutBytes == Array(bytes[10...19]))
        let tail = await h.run(["cat", "--range", "-5", "gs://demo/pics/photo.bin"])
        #expect(tail.stdoutBytes == Array(bytes.suffix(5)))

        let down = await h.run(["cp", "gs://demo/pics/photo.bin", h.path("out/")])
        #expect(down.code == .success, "\(down.stderr)")
        #expect(h.read("out/photo.bin") == bytes)
        let renamed = await h.run(["cp", "gs://demo/pics/photo.bin", h.path("copy.bin")])
        #expect(renamed.code == .success)
        #expect(h.read("copy.bin") == bytes)
        // No partial files left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.path("out")) == ["photo.bin"])
    }

    @Test func remoteToRemoteKeepsMetadata() async throws {
        let h = try CLIHarness()
        try h.write("a.txt", Array("hello".utf8))
        _ = await h.run(["cp", h.path("a.txt"), "gs://demo/a.txt", "--metadata", "k=v"])
        let copy = await h.run(["cp", "gs://demo/a.txt", "gs://other/b/a2.txt"])
        #expect(copy.code == .success, "\(copy.stderr)")
        let cat = await h.run(["cat", "gs://other/b/a2.txt"])
        #expect(cat.stdout == "hello")
        let stat = await h.run(["stat", "--json", "gs://other/b/a2.txt"])
        let object = try #require(try JSONValue.parse(stat.stdout).objectValue)
        #expect(object["contentType"]?.stringValue == "text/plain")
        #expect(object["metadata"]?.objectValue?["k"]?.stringValue == "v")
    }

    @Test func listing() async throws {
        let h = try CLIHarness()
        for name in ["a.txt", "dir/b.txt", "dir/sub/c.txt"] {
            try h.write("src/" + name, Array(name.utf8))
            _ = await h.run(["cp", h.path("src/" + name), "gs://demo/" + name])
        }
        let plain = await h.run(["ls", "gs://demo"])
        #expect(plain.stdout == "gs://demo/dir/\ngs://demo/a.txt\n")
        let recursive = await h.run(["ls", "-r", "gs://demo/dir"])
        #expect(recursive.stdout == "gs://demo/dir/b.txt\ngs://demo/dir/sub/c.txt\n")
        let long = await h.run(["ls", "-l", "gs://demo/dir/"])
        let lines = long.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[0] == "              gs://demo/dir/sub/")
        #expect(lines[1].hasPrefix("           9  20"))
        #expect(lines[1].hasSuffix("  text/plain  gs://demo/dir/b.txt"))
        #expect(lines[2] == "TOTAL: 1 objects, 9 bytes (9 B)")
        let json = await h.run(["ls", "-l", "--json", "gs://demo/dir/"])
        let array = try #require(try JSONValue.parse(json.stdout).arrayValue)
        #expect(array.count == 2)
        #expect(array[0].objectValue?["type"]?.stringValue == "folder")
        #expect(array[1].objectValue?["size"]?.int64Value == 9)
        #expect(array[1].objectValue?["updated"]?.stringValue?.hasPrefix("20") == true)
        let single = await h.run(["ls", "gs://demo/a.txt"])
        #expect(single.stdout == "gs://demo/a.txt\n")
        let none = await h.run(["ls", "gs://demo/nothing"])
        #expect(none.code == .failure)
        #expect(none.stderr == "silo: no objects match gs://demo/nothing\n")
    }

    @Test func removeAndMetadata() async throws {
        let h = try CLIHarness()
        try h.write("f.txt", Array("x".utf8))
        for name in ["f.txt", "tree/1.txt", "tree/deep/2.txt"] {
            _ = await h.run(["cp", h.path("f.txt"), "gs://demo/" + name])
        }
        let set = await h.run([
            "meta", "set", "gs://demo/f.txt", "a=1", "b=2", "--content-type", "text/x-one", "--cache-control",
            "no-store",
        ])
        #expect(set.code == .success, "\(set.stderr)")
        let unset = await h.run(["meta", "unset", "gs://demo/f.txt", "a", "--cache-control"])
        #expect(unset.code == .success, "\(unset.stderr)")
        let stat = await h.run(["stat", "--json", "gs://demo/f.txt"])
        let object = try #require(try JSONValue.parse(stat.stdout).objectValue)
        #expect(object["contentType"]?.stringValue == "text/x-one")
        #expect(object["cacheControl"] == nil)
        #expect(object["metadata"]?.objectValue?.keys == ["b"])

        let url = await h.run(["url", "gs://demo/f.txt"])
        #expect(url.stdout.hasPrefix("http://127.0.0.1:\(h.server.port)/v0/b/demo/o/f.txt?alt=media&token="))

        let folder = await h.run(["rm", "gs://demo/tree"])
        #expect(folder.code == .failure)
        #expect(folder.stderr == "silo: gs://demo/tree is a folder; use rm -r\n")
        let tree = await h.run(["rm", "-r", "gs://demo/tree"])
        #expect(tree.code == .success, "\(tree.stderr)")
        let one = await h.run(["rm", "gs://demo/f.txt"])
        #expect(one.code == .success)
        let left = await h.run(["ls", "-r", "gs://demo"])
        #expect(left.stdout.isEmpty)
    }

    @Test func actionableErrors() async throws {
        let h = try CLIHarness()
        let missing = await h.run(["stat", "gs://demo/nope.txt"])
        #expect(missing.code == .failure)
        #expect(missing.stderr == "silo: object not found: gs://demo/nope.txt\n")
        let catMissing = await h.run(["cat", "gs://demo/nope.txt"])
        #expect(catMissing.stderr == "silo: object not found: gs://demo/nope.txt\n")
        let downMissing = await h.run(["cp", "gs://demo/nope.txt", h.path("x")])
        #expect(downMissing.stderr == "silo: object not found: gs://demo/nope.txt\n")

        try h.write("s.txt", Array("secret".utf8))
        let denied = await h.run(["cp", h.path("s.txt"), "gs://demo/private/s.txt"])
        #expect(denied.code == .failure)
        #expect(denied.stderr == "silo: permission denied by rules for write on gs://demo/private/s.txt\n")
        let deniedMeta = await h.run(["meta", "set", "gs://demo/private/s.txt", "a=b"])
        #expect(deniedMeta.stderr == "silo: permission denied by rules for update on gs://demo/private/s.txt\n")

        let noFile = await h.run(["cp", h.path("absent"), "gs://demo/x"])
        #expect(noFile.stderr == "silo: no such file or directory: \(h.path("absent"))\n")
        let unreachable = await h.run(["stat", "gs://demo/x"], environment: ["SILO_ENDPOINT": "http://127.0.0.1:1"])
        #expect(unreachable.stderr == "silo: cannot reach http://127.0.0.1:1: connection refused\n")
    }

    @Test func tokenIsSentAsFirebaseAuthorization() async throws {
        let h = try CLIHarness()
        try h.write("t.txt", Array("t".utf8))
        // Any token is accepted by the allow-all test policy; the request must still succeed with the header.
        let up = await h.run(["cp", h.path("t.txt"), "gs://demo/t.txt", "--token", "owner"])
        #expect(up.code == .success, "\(up.stderr)")
    }

    @Test func resumesPartialDownload() async throws {
        let h = try CLIHarness()
        let bytes = binaryBytes(3 << 20, seed: 7)
        try h.write("big.bin", bytes)
        _ = await h.run(["cp", h.path("big.bin"), "gs://demo/big.bin"])
        let stat = await h.run(["stat", "--json", "gs://demo/big.bin"])
        let generation = try #require(try JSONValue.parse(stat.stdout).objectValue?["generation"]?.int64Value)
        // What an interrupted run leaves: the first megabyte in the generation's part file (and a stale one).
        try h.write("dl/big.bin.\(generation).part", Array(bytes.prefix(1 << 20)))
        try h.write("dl/big.bin.1.part", [1, 2, 3])
        let resumed = await h.run(["cp", "gs://demo/big.bin", h.path("dl/big.bin")])
        #expect(resumed.code == .success, "\(resumed.stderr)")
        #expect(resumed.stderr == "silo: resuming gs://demo/big.bin at byte 1048576 of 3145728\n")
        #expect(h.read("dl/big.bin") == bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.path("dl")) == ["big.bin"])
    }

    @Test func progressBarOnATerminal() async throws {
        let h = try CLIHarness()
        try h.write("p.bin", binaryBytes(2 << 20, seed: 3))
        let up = await h.run(["cp", h.path("p.bin"), "gs://demo/p.bin"], terminal: true)
        #expect(up.code == .success)
        #expect(up.stdout.hasPrefix("\rp.bin ["))
        #expect(up.stdout.contains("[########################] 100%  2.0 MiB/2.0 MiB"))
        #expect(up.stdout.hasSuffix("\n"))
        let down = await h.run(["cp", "gs://demo/p.bin", h.path("q.bin")], terminal: true)
        #expect(down.stdout.contains("100%  2.0 MiB/2.0 MiB"))
    }

    @Test func tokenAndRulesCheck() async throws {
        let h = try CLIHarness()
        let secret = h.path("secret")
        try String(repeating: "k", count: 40).write(toFile: secret, atomically: true, encoding: .utf8)
        let token = await h.run(
            ["token", "--uid", "alice", "--claims", "{\"admin\":true}", "--project", "demo"],
            environment: ["SILO_AUTH_SECRET": secret])
        #expect(token.code == .success, "\(token.stderr)")
        #expect(token.stdout.split(separator: ".").count == 3)
        let reserved = await h.run([
            "token", "--uid", "a", "--claims", "{\"sub\":1}", "--project", "p", "--auth-secret", secret,
        ])
        #expect(reserved.code == .failure)
        #expect(reserved.stderr == "silo: the custom claim 'sub' is reserved\n")
        let noUID = await h.run(["token", "--project", "p"])
        #expect(noUID.code == .usage)

        try
            "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n    match /{allPaths=**} {\n      allow read: if true;\n    }\n  }\n}\n"
            .write(toFile: h.path("good.rules"), atomically: true, encoding: .utf8)
        let good = await h.run(["rules", "check", h.path("good.rules")])
        #expect(good.code == .success, "\(good.stderr)")
        #expect(good.stdout == "\(h.path("good.rules")): ok\n")
        try "service firebase.storage {\n  match /b/{bucket}/o {\n    allow read: if ;\n  }\n}\n"
            .write(toFile: h.path("bad.rules"), atomically: true, encoding: .utf8)
        let bad = await h.run(["rules", "check", h.path("bad.rules")])
        #expect(bad.code == .failure)
        #expect(bad.stderr.hasPrefix("\(h.path("bad.rules")):3:"))
    }
}
