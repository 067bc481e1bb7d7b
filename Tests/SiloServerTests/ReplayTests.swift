import Foundation
import SiloCore
import SiloHTTP
import SiloRules
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Synchronization
import Testing

/// Answers an event loop sends again to a byte-identical request head (`ReplayPermit`, `ReplayMemo`), on a real
/// socket over the embedded stores: they are replayed only while they hold, and only when they follow from the
/// object's version and the rules' path decision alone.
///
/// One client is one keep-alive connection, so every request of a test reaches the same event loop's memo. A head
/// is marked seen when it first arrives and its answer kept the next time it is answered inline (the first read of
/// an object after an upload goes to a worker), so of n identical reads after an upload, n − 2 are replays.
@Suite("replayed answers")
struct ReplayTests {
    /// Whether this run's servers replay at all: not on PostgreSQL (`make pairs`), which keeps no stamp (several
    /// nodes may write).
    static var replaysExpected: Bool {
        ProcessInfo.processInfo.environment["SILO_TEST_SERVER_METADATA"] != "postgres"
    }

    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /public/{name} { allow read, write: if true; }
            match /timed/{name} { allow read: if request.time < timestamp.date(2100, 1, 1); allow write: if true; }
            match /users/{name} { allow read: if request.auth != null; allow write: if true; }
            match /sized/{name} { allow read: if resource.size < 100; allow write: if true; }
          }
        }
        """

    static let denyAll = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o { match /{all=**} { allow read, write: if false; } }
        }
        """

    static func policy(_ source: String) throws -> RulesAccessPolicy {
        RulesAccessPolicy(program: try RulesProgram.compile(source: source, fileName: "replay.rules"))
    }

    let policy: SwappableAccessPolicy
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        policy = SwappableAccessPolicy(try Self.policy(Self.rules))
        server = try TestServer(backend: .embedded, policy: policy)
        client = server.client()
    }

    var replays: Double {
        get throws { try client.scrape().value("silo_replayed_answers_total") }
    }

    /// `count` GETs of `target` with `headers`, each expected to answer `status` with `body` (when given);
    /// returns their request ids.
    @discardableResult
    func read(
        _ target: String, _ count: Int, headers: HTTPHeaders = [:], status: Int = 200, body: [UInt8]? = nil,
        _ comment: Comment? = nil
    ) throws -> [String] {
        var ids: [String] = []
        for index in 0..<count {
            let answer = try client.send(method: "GET", target: target, headers: headers)
            #expect(answer.status == status, "read \(index) of \(target): \(answer.text)")
            if let body { #expect(answer.body == body, "read \(index) of \(target)") }
            ids.append(answer.headers["X-Request-Id"] ?? "")
        }
        return ids
    }

    @Test("a repeated v0 read is replayed: the same bytes and headers, a new request id, counted and logged")
    func repeatedReadIsReplayed() throws {
        let log = try ObservabilityTests.LogFile()
        let server = try TestServer(backend: .embedded, observability: Observability(accessLog: log.log))
        let client = server.client()
        let content = pattern(1000)
        #expect(try client.mediaUpload("public/a.bin", content, contentType: "image/png").status == 200)
        let target = objectPath("public/a.bin") + "?alt=media"
        var answers: [TestResponse] = []
        for _ in 0..<7 { answers.append(try client.send(method: "GET", target: target)) }
        for answer in answers {
            #expect(answer.status == 200 && answer.body == content)
            // Everything but the id and the date is the first answer's, field for field.
            var fields = answer.headers
            var first = answers[0].headers
            for name in ["X-Request-Id", "Date"] {
                fields.remove(name)
                first.remove(name)
            }
            #expect(fields.map { "\($0.name): \($0.value)" } == first.map { "\($0.name): \($0.value)" })
        }
        #expect(Set(answers.map { $0.headers["X-Request-Id"] ?? "" }).count == 7)
        let metrics = try client.scrape()
        #expect(metrics.value("silo_replayed_answers_total") == (Self.replaysExpected ? 5 : 0))
        #expect(
            metrics.value("silo_http_requests_total", ["api": "v0", "route": "firebase_object", "code": "200"]) == 7)
        let reads = try log.lines().filter { $0["route"]?.stringValue == "firebase_object" }
        #expect(reads.count == 7)
        #expect(
            Set(reads.compactMap { $0["request_id"]?.stringValue })
                == Set(answers.compactMap { $0.headers["X-Request-Id"] }))
        #expect(reads.allSatisfy { $0["object"]?.stringValue == "public/a.bin" && $0["status"]?.int64Value == 200 })
    }

    @Test("an overwrite, a metadata change, a delete and a rules reload each end a replayed answer at once")
    func changesEndReplays() throws {
        let target = objectPath("public/b.txt") + "?alt=media"
        #expect(try client.mediaUpload("public/b.txt", bytes("first"), contentType: "text/plain").status == 200)
        try read(target, 5, body: bytes("first"))
        let afterFirst = try replays
        #expect(afterFirst == (Self.replaysExpected ? 3 : 0))

        #expect(try client.mediaUpload("public/b.txt", bytes("second"), contentType: "text/plain").status == 200)
        try read(target, 5, body: bytes("second"))

        let patched = try client.send(
            method: "PATCH", target: objectPath("public/b.txt"),
            headers: ["Content-Type": "application/json; charset=utf-8"],
            body: bytes(#"{"contentType":"text/csv","cacheControl":"no-store"}"#))
        #expect(patched.status == 200)
        for _ in 0..<4 {
            let answer = try client.send(method: "GET", target: target)
            #expect(answer.text == "second")
            #expect(answer.headers["Content-Type"] == "text/csv" && answer.headers["Cache-Control"] == "no-store")
        }

        #expect(try client.send(method: "DELETE", target: objectPath("public/b.txt")).status == 204)
        try read(target, 3, status: 404)

        #expect(try client.mediaUpload("public/b.txt", bytes("third")).status == 200)
        try read(target, 5, body: bytes("third"))
        let beforeReload = try replays
        #expect(beforeReload > afterFirst || !Self.replaysExpected)
        policy.replace(with: try Self.policy(Self.denyAll))
        try read(target, 3, status: 403)
        policy.replace(with: try Self.policy(Self.rules))
        try read(target, 4, body: bytes("third"))
    }

    @Test("a write of another object leaves a kept answer standing; a write of its bucket does not")
    func otherWritesLeaveItStanding() throws {
        let target = objectPath("public/kept.txt") + "?alt=media"
        #expect(try client.mediaUpload("public/kept.txt", bytes("kept")).status == 200)
        try read(target, 4, body: bytes("kept"))
        let before = try replays
        for index in 0..<3 { #expect(try client.mediaUpload("public/other-\(index).txt", bytes("x")).status == 200) }
        try read(target, 3, body: bytes("kept"))
        #expect(try replays == before + (Self.replaysExpected ? 3 : 0))
        // A bucket write (here its CORS configuration, through the JSON API) moves every stamp.
        let patched = try client.send(
            method: "PATCH", target: "/storage/v1/b/\(bucket)", headers: ["Content-Type": "application/json"],
            body: bytes(#"{"cors":[{"origin":["https://example.com"],"method":["GET"]}]}"#))
        #expect(patched.status == 200, "\(patched.text)")
        let afterBucket = try replays
        try read(target, 1, body: bytes("kept"))
        #expect(try replays == afterBucket)
    }

    @Test("answers that depend on the time, the caller or the resource are not replayed; a download token's are")
    func onlyLastingAnswersAreReplayed() throws {
        for name in ["timed/t", "users/u", "sized/s", "public/p"] {
            #expect(try client.mediaUpload(name, bytes("x")).status == 200)
        }
        let start = try replays
        try read(objectPath("timed/t") + "?alt=media", 5, body: bytes("x"))
        try read(objectPath("sized/s") + "?alt=media", 5, body: bytes("x"))
        // A credential's verdict depends on the time; without one, the auth rule denies.
        let signedIn: HTTPHeaders = ["Authorization": "Firebase \(emulatorToken(uid: "u1"))"]
        try read(objectPath("users/u") + "?alt=media", 5, headers: signedIn, body: bytes("x"))
        try read(objectPath("users/u") + "?alt=media", 5, status: 403)
        // Even where the rules decide by the path alone: the credential itself holds only until it expires.
        try read(objectPath("public/p") + "?alt=media", 5, headers: signedIn, body: bytes("x"))
        // The client's own request id is echoed, so the answer is the handler's every time.
        let echoed = try read(objectPath("public/p") + "?alt=media", 5, headers: ["X-Request-Id": "mine-1"])
        #expect(echoed.allSatisfy { $0 == "mine-1" })
        // The GCS JSON API's reads are always the handler's.
        try read("/storage/v1/b/\(bucket)/o/public%2Fp?alt=media", 5, body: bytes("x"))
        #expect(try replays == start)

        // A download token grants by the version alone, whatever the rules say about the caller.
        let metadata = try client.send(method: "GET", target: objectPath("users/u"), headers: signedIn)
        let token = try #require(try JSONValue.parse(metadata.body).objectValue?["downloadTokens"]?.stringValue)
        try read(objectPath("users/u") + "?alt=media&token=\(token)", 5, body: bytes("x"))
        #expect(try replays == start + (Self.replaysExpected ? 3 : 0))
        // Another token is not the object's: the rules decide, for this caller, every time.
        try read(objectPath("users/u") + "?alt=media&token=not-\(token)", 4, status: 403)
        #expect(try replays == start + (Self.replaysExpected ? 3 : 0))
    }

    @Test("heads that differ in one header are answered apart: ranges, validators, HEAD")
    func headsAreKeysByteForByte() throws {
        let content = pattern(4000)
        #expect(try client.mediaUpload("public/r.bin", content).status == 200)
        let target = objectPath("public/r.bin") + "?alt=media"
        let etag = try #require(try client.send(method: "GET", target: target).headers["ETag"])
        for _ in 0..<4 {
            let low = try client.send(method: "GET", target: target, headers: ["Range": "bytes=0-9"])
            #expect(low.status == 206 && low.body == Array(content[0...9]))
            let high = try client.send(method: "GET", target: target, headers: ["Range": "bytes=10-19"])
            #expect(high.status == 206 && high.body == Array(content[10...19]))
            let whole = try client.send(method: "GET", target: target)
            #expect(whole.status == 200 && whole.body == content)
            let unchanged = try client.send(method: "GET", target: target, headers: ["If-None-Match": etag])
            #expect(unchanged.status == 304 && unchanged.body.isEmpty)
            let head = try client.send(method: "HEAD", target: target)
            #expect(head.status == 200 && head.body.isEmpty && head.headers["Content-Length"] == "4000")
        }
        #expect(try replays > 0 || !Self.replaysExpected)
    }

    @Test("a v0 metadata read is replayed too, and changes with the object")
    func metadataReadIsReplayed() throws {
        #expect(try client.mediaUpload("public/m.txt", bytes("m"), contentType: "text/plain").status == 200)
        let before = try replays
        let first = try client.send(method: "GET", target: objectPath("public/m.txt"))
        let generation = try JSONValue.parse(first.body).objectValue?["generation"]?.stringValue
        for _ in 0..<4 {
            let answer = try client.send(method: "GET", target: objectPath("public/m.txt"))
            #expect(try JSONValue.parse(answer.body).objectValue?["generation"]?.stringValue == generation)
        }
        // The first read went to a worker, the second's answer was kept, the other three were replays.
        #expect(try replays == before + (Self.replaysExpected ? 3 : 0))
        #expect(try client.mediaUpload("public/m.txt", bytes("mm"), contentType: "text/plain").status == 200)
        let after = try client.send(method: "GET", target: objectPath("public/m.txt"))
        let object = try #require(try JSONValue.parse(after.body).objectValue)
        #expect(object["generation"]?.stringValue != generation && object["size"]?.stringValue == "2")
    }
}

/// Replays over TLS: the answer goes out through OpenSSL like any other, and a head seen over TLS is a key of its own.
@Suite("replayed answers over HTTPS")
struct ReplayTLSTests {
    @Test("a repeated read over one TLS connection is replayed, and an overwrite ends it")
    func replaysOverTLS() throws {
        let ca = try TestCertificateAuthority()
        let issued = try ca.issue(serial: 0x79)
        let server = try TestServer(tls: .files(certificate: issued.certificateFile, key: issued.privateKeyFile))
        defer { server.shutdown() }
        let base = "https://localhost:\(server.port)"
        func curl(_ arguments: [String], input: Data = Data()) throws -> String {
            let result = try ChildProcess.run(
                "/usr/bin/curl", ["-sS", "--fail", "--max-time", "30", "--cacert", ca.certificateFile] + arguments,
                input: input)
            #expect(result.status == 0, "curl \(arguments): \(result.errorText)")
            return result.outputText
        }
        let upload = [
            "-X", "POST", "--data-binary", "@-", "\(base)/v0/b/\(bucket)/o?name=public%2Ftls.txt", "-o", "/dev/null",
        ]
        _ = try curl(upload, input: Data("over tls".utf8))
        let target = "\(base)\(objectPath("public/tls.txt"))?alt=media"
        // One curl, one connection: the same head six times.
        #expect(try curl(Array(repeating: target, count: 6)) == String(repeating: "over tls", count: 6))
        _ = try curl(upload, input: Data("changed".utf8))
        #expect(try curl(Array(repeating: target, count: 4)) == String(repeating: "changed", count: 4))
        let metrics = ScrapedMetrics(try curl(["\(base)/metrics"]))
        #expect(metrics.value("silo_replayed_answers_total") == (ReplayTests.replaysExpected ? 6 : 0))
    }
}

/// Replays against concurrent overwrites, on real sockets: a reader must never get a version older than the last
/// overwrite that finished before its request was sent, however its answer was made.
@Suite("replayed answers under concurrent writes")
struct ReplayRaceTests {
    /// What the threads share: the last finished write, and whether the writer is done.
    final class Progress: Sendable {
        let finished = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let problems = Mutex<[String]>([])
        let reads = Atomic<Int>(0)
        let ended = DispatchSemaphore(value: 0)

        func note(_ problem: String) { problems.withLock { $0.append(problem) } }
    }

    @Test("readers never see a version older than the last finished write")
    func readersNeverGoBack() throws {
        let server = try TestServer(backend: .embedded, threads: 2)
        let name = "public/race.txt"
        let target = objectPath(name) + "?alt=media"
        #expect(try server.client().mediaUpload(name, bytes("0")).status == 200)
        let progress = Progress()
        let port = server.port
        // Threads, not tasks: the clients block on their sockets.
        var threads: [Thread] = []
        threads.append(
            Thread {
                defer {
                    progress.stop.store(true, ordering: .sequentiallyConsistent)
                    progress.ended.signal()
                }
                let client = HTTPTestClient(port: port)
                for version in 1...300 {
                    guard let answer = try? client.mediaUpload(name, bytes("\(version)")), answer.status == 200 else {
                        progress.note("write \(version) failed")
                        return
                    }
                    progress.finished.store(version, ordering: .sequentiallyConsistent)
                }
            })
        for _ in 0..<2 {
            threads.append(
                Thread {
                    defer { progress.ended.signal() }
                    // Each reader one connection: its requests reach one event loop's memo.
                    let client = HTTPTestClient(port: port)
                    while !progress.stop.load(ordering: .sequentiallyConsistent) {
                        let floor = progress.finished.load(ordering: .sequentiallyConsistent)
                        guard let answer = try? client.send(method: "GET", target: target) else {
                            progress.note("a read failed")
                            return
                        }
                        progress.reads.add(1, ordering: .relaxed)
                        guard answer.status == 200, let seen = Int(answer.text) else {
                            progress.note("status \(answer.status): \(answer.text)")
                            continue
                        }
                        if seen < floor { progress.note("read \(seen) after write \(floor) finished") }
                    }
                })
        }
        for thread in threads { thread.start() }
        // Each thread signals as it ends; the readers end after the writer, at their next request.
        for _ in threads { #expect(progress.ended.wait(timeout: .now() + 60) == .success) }
        let problems = progress.problems.withLock { $0 }
        #expect(problems.count == 0, "\(problems.prefix(5))")
        #expect(progress.finished.load(ordering: .relaxed) == 300)
        #expect(progress.reads.load(ordering: .relaxed) > 300)
        let replays = try server.client().scrape().value("silo_replayed_answers_total")
        // Between writes the same head repeats: some answers are replays, or this test would test nothing.
        #expect(replays > 0 || !ReplayTests.replaysExpected)
    }
}
