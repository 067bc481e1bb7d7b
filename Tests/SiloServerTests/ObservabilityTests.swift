import Foundation
import SiloAuth
import SiloCore
import SiloHTTP
import SiloRules
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// `/metrics`, `/healthz`, `/readyz`, `X-Request-Id` and the access log, on a live server on a socket.
@Suite struct ObservabilityTests {
    static let routeNames: Set<String> = [
        "probe", "firebase_bucket", "firebase_object", "internal_reset", "internal_set_rules", "internal_export",
        "openapi_document", "gcs_buckets",
        "gcs_bucket", "gcs_objects", "gcs_object", "gcs_copy", "gcs_compose", "gcs_upload", "gcs_bucket_sub",
        "gcs_object_sub", "gcs_service_account", "gcs_hmac_keys", "gcs_unimplemented", "oauth_token", "batch",
        "xml_bucket", "xml_object", "xml_subresource", "xml_buckets", "metrics", "healthz", "readyz", "unknown",
        "invalid", "preflight",
    ]

    /// An access log in a temporary directory, and its lines parsed.
    struct LogFile {
        let directory: TemporaryDirectory
        let log: AccessLog
        var path: String { directory.path + "/access.log" }

        init(capacity: Int = 16_384) throws {
            directory = try TemporaryDirectory()
            log = try AccessLog(.file(directory.path + "/access.log"), capacity: capacity)
        }

        var text: String {
            log.flush()
            return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        }

        func lines() throws -> [JSONObject] {
            try text.split(separator: "\n").map { try #require(JSONValue.parse(Array($0.utf8)).objectValue) }
        }
    }

    @Test("request counters, bytes and cache lookups match the requests made, for v0, JSON and XML")
    func countersMatchRequests() throws {
        let server = try TestServer(backend: .embedded)
        let client = server.client()
        let content = pattern(2000)
        for index in 0..<3 { #expect(try client.mediaUpload("counted/\(index).bin", content).status == 200) }
        // Five reads of one object: the first through a worker fills the caches, the rest may be answered inline.
        for _ in 0..<5 {
            #expect(try client.send(method: "GET", target: objectPath("counted/0.bin") + "?alt=media").body == content)
        }
        #expect(try client.send(method: "GET", target: objectPath("missing.bin")).status == 404)
        #expect(try client.send(method: "GET", target: "/storage/v1/b/\(bucket)/o").status == 200)
        #expect(try client.send(method: "GET", target: "/\(bucket)/counted/1.bin").status == 200)

        let metrics = try client.scrape()
        #expect(metrics.malformed.isEmpty)
        let v0Object = ["api": "v0", "route": "firebase_object"]
        #expect(
            metrics.value("silo_http_requests_total", ["api": "v0", "route": "firebase_bucket", "code": "200"]) == 3)
        #expect(metrics.value("silo_http_requests_total", v0Object.merging(["code": "200"]) { $1 }) == 5)
        #expect(
            metrics.value("silo_http_requests_total", v0Object.merging(["code": "404", "class": "4xx"]) { $1 }) == 1)
        #expect(metrics.value("silo_http_requests_total", ["api": "json", "route": "gcs_objects", "code": "200"]) == 1)
        #expect(metrics.value("silo_http_requests_total", ["api": "xml", "route": "xml_object", "code": "200"]) == 1)
        // The scrape itself is counted once it is answered: not in its own answer.
        #expect(metrics.value("silo_http_requests_total", ["route": "metrics"]) == 0)
        #expect(
            metrics.value("silo_http_request_body_bytes_total", ["api": "v0", "route": "firebase_bucket"])
                == Double(3 * content.count))
        #expect(
            metrics.value("silo_http_response_body_bytes_total", v0Object) >= Double(5 * content.count))
        #expect(metrics.value("silo_http_request_duration_seconds_count", v0Object) == 6)
        // Four of the five reads found the object's bytes in memory: in the caches, or as a replayed answer
        // (which skips them: the first read goes to a worker, the second's answer is kept, the rest are replays).
        let replays = metrics.value("silo_replayed_answers_total")
        #expect(metrics.value("silo_cache_lookups_total", ["cache": "small_blob", "result": "hit"]) + replays >= 4)
        // Only the embedded store keeps records in memory (`make pairs` runs this on PostgreSQL too, which does not).
        if ProcessInfo.processInfo.environment["SILO_TEST_SERVER_METADATA"] != "postgres" {
            #expect(metrics.value("silo_cache_lookups_total", ["cache": "metadata", "result": "hit"]) + replays >= 4)
        }
        #expect(replays == (ReplayTests.replaysExpected ? 3 : 0))
        #expect(metrics.value("silo_cache_lookups_total", ["cache": "version_response", "result": "hit"]) >= 1)
        #expect(metrics.types["silo_http_request_duration_seconds"] == "histogram")
        #expect(metrics.types["silo_upload_sessions_open"] == "gauge")

        let again = try client.scrape()
        #expect(again.value("silo_http_requests_total", ["route": "metrics", "code": "200"]) == 1)
    }

    @Test("every histogram's buckets are cumulative, in increasing le, ending in +Inf equal to _count")
    func histogramBucketsMonotonic() throws {
        let server = try TestServer(backend: .memory)
        let client = server.client()
        for index in 0..<20 { _ = try client.mediaUpload("h/\(index)", pattern(100 * index)) }
        for index in 0..<20 { _ = try client.send(method: "GET", target: objectPath("h/\(index)") + "?alt=media") }
        let metrics = try client.scrape()
        var series: [String: [(le: Double, count: Double)]] = [:]
        for sample in metrics.samples where sample.name == "silo_http_request_duration_seconds_bucket" {
            let key = "\(sample.labels["api"]!)/\(sample.labels["route"]!)"
            series[key, default: []].append(
                (try #require(Double(sample.labels["le"]!.replacingOccurrences(of: "+Inf", with: "inf"))), sample.value)
            )
        }
        #expect(series.count >= 2)
        for (key, buckets) in series {
            #expect(buckets.map(\.le) == buckets.map(\.le).sorted(), "le not increasing in \(key)")
            #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0.count <= $1.count }, "not cumulative in \(key)")
            #expect(buckets.last?.le == .infinity)
            let parts = key.split(separator: "/").map(String.init)
            let count = metrics.value("silo_http_request_duration_seconds_count", ["api": parts[0], "route": parts[1]])
            #expect(buckets.last?.count == count && count > 0)
        }
    }

    @Test("labels come from the router's list: no path, bucket or object name from a request reaches /metrics")
    func labelsBounded() throws {
        let server = try TestServer(backend: .memory)
        let client = server.client()
        let marker = "zq\(UInt32.random(in: 0...UInt32.max))"
        let targets = [
            "/\(marker)", "/\(marker)/\(marker)", "/v0/b/\(marker).appspot.com/o/\(marker)", "/storage/v1/b/\(marker)",
            "/storage/v1/\(marker)", "/v0/b/%ZZ\(marker)/o", "/%FF\(marker)", "/batch/\(marker)", "/\(marker)?acl",
            "/v0/\(marker)", "/download/storage/v1/b/\(marker)/o/\(marker)?alt=media",
        ]
        for target in targets {
            for method in ["GET", "PUT", "DELETE", "PATCH", "BREW"] {
                _ = try client.send(method: method, target: target, headers: ["Origin": "https://\(marker).example"])
            }
        }
        let text = try client.send(method: "GET", target: "/metrics").text
        #expect(!text.contains(marker))
        let metrics = ScrapedMetrics(text)
        #expect(metrics.malformed.isEmpty)
        let apis: Set<String> = ["v0", "json", "xml", "other"]
        for sample in metrics.samples {
            if let route = sample.labels["route"] { #expect(Self.routeNames.contains(route), "route \(route)") }
            if let api = sample.labels["api"] { #expect(apis.contains(api), "api \(api)") }
            if let code = sample.labels["code"] { #expect(Int(code).map { (100...599).contains($0) } == true) }
            #expect(sample.labels["bucket"] == nil)
        }
        // Label sets are bounded: whatever the paths, one series per API, route and status.
        let requestSeries = metrics.samples.filter { $0.name == "silo_http_requests_total" }
        #expect(requestSeries.count < 40)
    }

    @Test("X-Request-Id: a short safe one is echoed, anything else is replaced; every answer has one")
    func requestIDEchoedAndValidated() throws {
        let server = try TestServer(backend: .memory)
        let client = server.client()
        _ = try client.mediaUpload("id.txt", bytes("x"))
        let sent = try client.send(
            method: "GET", target: objectPath("id.txt"), headers: ["X-Request-Id": "trace-1.a_B"])
        #expect(sent.headers["X-Request-Id"] == "trace-1.a_B")
        let made = try client.send(method: "GET", target: objectPath("id.txt"))
        let id = try #require(made.headers["X-Request-Id"])
        #expect(id.utf8.count == 15 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        #expect(try client.send(method: "GET", target: objectPath("id.txt")).headers["X-Request-Id"] != id)
        for bad in [String(repeating: "a", count: 65), "a b", "<script>", "a\"b", "é", "id;rm -rf"] {
            let answer = try client.send(method: "GET", target: objectPath("id.txt"), headers: ["X-Request-Id": bad])
            let echoed = try #require(answer.headers["X-Request-Id"])
            #expect(echoed != bad && echoed.utf8.count == 15, "\(bad) was echoed")
        }
        // Answered before routing, after a refusal, on the JSON and XML APIs: all carry one.
        for (method, target) in [
            ("OPTIONS", objectPath("id.txt")), ("GET", "/v0/b/%ZZ/o"), ("GET", "/storage/v1/b/\(bucket)/o"),
            ("GET", "/\(bucket)/id.txt"), ("GET", "/healthz"),
        ] {
            let answer = try client.send(
                method: method, target: target,
                headers: [
                    "X-Request-Id": "r-\(method)", "Origin": "https://app.example",
                    "Access-Control-Request-Method": "GET",
                ])
            #expect(answer.headers["X-Request-Id"] == "r-\(method)", "\(method) \(target)")
        }
    }

    @Test("a 5xx names the request id its header and its log line carry, and counts the error's kind")
    func failureNamesTheRequestID() throws {
        let hooks = StoreCallHooks()
        let log = try LogFile()
        let server = try TestServer(
            backend: .memory, hooks: hooks, observability: Observability(accessLog: log.log))
        let client = server.client()
        _ = try client.mediaUpload("fails.txt", bytes("x"))
        hooks.set { call, moment in
            if call.method == "object" && moment == .before { throw StorageError(.ioError, "disk on fire") }
        }
        let answer = try client.send(
            method: "GET", target: objectPath("fails.txt"), headers: ["X-Request-Id": "failing-1"])
        #expect(answer.status == 500)
        #expect(answer.headers["X-Request-Id"] == "failing-1")
        #expect(answer.text.contains("request id failing-1") && !answer.text.contains("disk on fire"))
        hooks.set(nil)
        let line = try #require(try log.lines().first { $0["request_id"]?.stringValue == "failing-1" })
        #expect(line["status"] == .number("500"))
        #expect(try client.scrape().value("silo_store_errors_total", ["kind": "ioError"]) == 1)
    }

    @Test("access log: one line per request with its fields; names escaped; no token, key or signature")
    func accessLogHasNoSecrets() throws {
        let adminKey = "observability-admin-key-0123456789"
        let downloadToken = "5ee7c0de-0000-4000-8000-00000000a11"
        var auth = TokenVerifier.Configuration()
        auth.emulator = true
        auth.adminKeys = try AdminKeys(keys: [adminKey])
        let log = try LogFile()
        let server = try TestServer(
            backend: .memory, credentials: TokenVerifier(auth), observability: Observability(accessLog: log.log))
        let client = server.client()
        let name = "dir/quote\"back\\slash tab\tü 雪.txt"
        let userToken = emulatorToken(uid: "alice-uid")
        #expect(
            try client.mediaUpload(name, bytes("hello"), headers: ["Authorization": "Firebase \(userToken)"]).status
                == 200)
        #expect(
            try client.send(
                method: "GET", target: objectPath(name) + "?alt=media&token=\(downloadToken)",
                headers: ["Authorization": "Bearer \(adminKey)"]
            ).status != 500)
        let signature = "deadbeef" + String(repeating: "0123456789abcdef", count: 8)
        _ = try client.send(
            method: "GET",
            target: "/\(bucket)/x?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam.gserviceaccount.com"
                + "%2F20260101%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=20260101T000000Z&X-Goog-Expires=60"
                + "&X-Goog-SignedHeaders=host&X-Goog-Signature=\(signature)")
        _ = try client.send(
            method: "POST", target: "/token", headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: bytes("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=eyJsecretassertion"))

        let text = log.text
        for secret in [adminKey, downloadToken, userToken, signature, "eyJsecretassertion", "token="] {
            #expect(!text.contains(secret), "the log holds \(secret)")
        }
        let lines = try log.lines()
        #expect(lines.count == 4 && text.split(separator: "\n").count == 4)
        let upload = lines[0]
        #expect(upload["api"]?.stringValue == "v0" && upload["route"]?.stringValue == "firebase_bucket")
        #expect(upload["caller"]?.stringValue == "user" && upload["uid"]?.stringValue == "alice-uid")
        #expect(upload["bytes_in"] == .number("5") && upload["status"] == .number("200"))
        #expect(upload["bucket"]?.stringValue == bucket)
        let read = lines[1]
        #expect(read["object"]?.stringValue == name, "the name read back from the JSON line is the object's")
        #expect(read["caller"]?.stringValue == "admin" && read["method"]?.stringValue == "GET")
        #expect(lines[2]["caller"]?.stringValue == "anonymous" && lines[2]["api"]?.stringValue == "xml")
        for line in lines {
            for key in ["time", "request_id", "api", "route", "status", "bytes_in", "bytes_out", "duration_us"] {
                #expect(line[key] != nil, "\(key) missing")
            }
        }
    }

    @Test("a full buffer drops lines and counts them; it never blocks a request")
    func accessLogDropsWhenFull() throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.path + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        // The reader end first (non-blocking), so that opening the writer end does not wait; nobody reads until the
        // requests are made, so the pipe fills and the writer thread blocks in write().
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        let log = try AccessLog(.file(fifo), capacity: 8)
        let server = try TestServer(.inProcess, backend: .memory, observability: Observability(accessLog: log))
        let client = server.client()
        let requests = 2000
        for _ in 0..<requests { _ = try client.send(method: "GET", target: "/healthz") }
        #expect(log.dropped > 0)
        // Drain the pipe until every line taken is written (giving up after 10 000 empty reads, so that a lost
        // line fails the test instead of hanging it).
        var buffer = [UInt8](repeating: 0, count: 65536)
        var lines = 0
        var emptyReads = 0
        while UInt64(lines) + log.dropped < UInt64(requests) && emptyReads < 10_000 {
            let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
            if n > 0 {
                lines += buffer[0..<n].filter { $0 == 0x0A }.count
                emptyReads = 0
            } else {
                emptyReads += 1
                usleep(1000)
            }
        }
        log.flush()
        #expect(log.written + log.dropped == UInt64(requests))
        #expect(UInt64(lines) == log.written)
        let metrics = try client.scrape()
        #expect(metrics.value("silo_access_log_lines_total", ["result": "dropped"]) == Double(log.dropped))
        log.close()
    }

    @Test("/healthz answers without the stores; /readyz answers 503 naming the store that fails")
    func healthAndReadiness() throws {
        let hooks = StoreCallHooks()
        var configuration = ServerConfiguration()
        // Far above what a loaded machine takes, so that only the failing store can make the answer 503.
        configuration.readinessTimeoutSeconds = 60
        let server = try TestServer(backend: .embedded, configuration: configuration, hooks: hooks)
        let client = server.client()
        #expect(try client.send(method: "GET", target: "/healthz").status == 200)
        let ready = try client.send(method: "GET", target: "/readyz")
        #expect(ready.status == 200 && ready.text == "ready\n")
        hooks.set { call, _ in
            if call.method == "bucket" { throw StorageError(.unavailable, "connection refused by db.internal:5432") }
        }
        let notReady = try client.send(method: "GET", target: "/readyz")
        #expect(notReady.status == 503 && notReady.text == "not ready: metadata\n", "\(notReady.text)")
        #expect(try client.send(method: "GET", target: "/healthz").status == 200)
        #expect(try client.send(method: "POST", target: "/healthz").status == 405)
        hooks.set { call, _ in
            if call.method == "openReader" { throw StorageError(.ioError, "EIO reading /secret/path") }
        }
        let blobsDown = try client.send(method: "GET", target: "/readyz")
        #expect(blobsDown.status == 503 && blobsDown.text == "not ready: blobs\n", "\(blobsDown.text)")
    }

    @Test("/readyz gives up on a store that hangs, within its timeout")
    func readinessTimesOut() throws {
        let hooks = StoreCallHooks()
        let release = DispatchSemaphore(value: 0)
        var configuration = ServerConfiguration()
        configuration.readinessTimeoutSeconds = 0.5
        let server = try TestServer(backend: .memory, configuration: configuration, hooks: hooks)
        let client = server.client()
        hooks.set { call, moment in
            if call.method == "bucket" && moment == .before { _ = release.wait(timeout: .now() + 30) }
        }
        let answer = try client.send(method: "GET", target: "/readyz")
        #expect(answer.status == 503 && answer.text.contains("stores"))
        // While the hung check runs, another is refused at once instead of starting a second thread.
        #expect(try client.send(method: "GET", target: "/readyz").status == 503)
        hooks.set(nil)
        release.signal()
    }

    @Test("/metrics needs an admin key outside emulator mode; health endpoints never do")
    func metricsAccess() throws {
        let adminKey = "metrics-admin-key-0123456789abcdef"
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        var auth = TokenVerifier.Configuration()
        auth.adminKeys = try AdminKeys(keys: [adminKey])
        let server = try TestServer(backend: .memory, configuration: configuration, credentials: TokenVerifier(auth))
        let client = server.client()
        #expect(try client.send(method: "GET", target: "/metrics").status == 401)
        #expect(try client.send(method: "GET", target: "/healthz").status == 200)
        #expect(try client.send(method: "GET", target: "/readyz").status == 200)
        let scraped = try client.send(
            method: "GET", target: "/metrics", headers: ["Authorization": "Bearer \(adminKey)"])
        #expect(scraped.status == 200)
        #expect(scraped.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8")
        #expect(
            ScrapedMetrics(scraped.text).value("silo_http_requests_total", ["route": "metrics", "code": "401"]) == 1)
    }

    @Test("rules decisions, denials and errors are counted once registered as a source")
    func rulesCounters() throws {
        let source = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /public/{name} { allow read, write: if true; }
                match /private/{name} { allow read: if request.auth.uid == 'x'; }
                match /broken/{name} { allow read: if resource.metadata.missing.field == 1; }
              }
            }
            """
        let statistics = RulesStatistics()
        let policy = RulesAccessPolicy(
            program: try RulesProgram.compile(source: source, fileName: "t.rules"), statistics: statistics)
        let observability = Observability()
        observability.register(statistics)
        let server = try TestServer(backend: .memory, policy: policy, observability: observability)
        let client = server.client()
        #expect(try client.mediaUpload("public/a", bytes("a")).status == 200)
        #expect(try client.send(method: "GET", target: objectPath("private/a")).status == 403)
        #expect(try client.send(method: "GET", target: objectPath("broken/a")).status == 403)
        let metrics = try client.scrape()
        #expect(metrics.value("silo_rules_denials_total") == 2)
        #expect(metrics.value("silo_rules_errors_total") >= 1)
        #expect(metrics.value("silo_rules_decisions_total") >= 3)
    }

    @Test("a batch's calls are counted and logged as requests of their own, with the batch's id")
    func batchCalls() throws {
        let log = try LogFile()
        let server = try TestServer(backend: .memory, observability: Observability(accessLog: log.log))
        let client = server.client()
        _ = try client.mediaUpload("b1", bytes("1"))
        let calls = [
            GCSBatchTests.Call("1", "GET /storage/v1/b/\(bucket)/o/b1 HTTP/1.1"),
            GCSBatchTests.Call("2", "GET /storage/v1/b/\(bucket)/o/nothing HTTP/1.1"),
        ]
        let answer = try GCSBatchTests.send(client, calls, headers: ["X-Request-Id": "the-batch"])
        #expect(answer.status == 200 && answer.headers["X-Request-Id"] == "the-batch")
        let lines = try log.lines()
        let parts = lines.filter { $0["batch_id"]?.stringValue == "the-batch" }
        // Each part names its call's own id, the one its log line carries.
        for part in parts {
            let id = try #require(part["request_id"]?.stringValue)
            #expect(answer.text.contains("X-Request-Id: \(id)\r\n"))
        }
        #expect(parts.map { $0["status"] } == [.number("200"), .number("404")])
        #expect(
            parts.allSatisfy {
                $0["route"]?.stringValue == "gcs_object" && $0["request_id"]?.stringValue != "the-batch"
            })
        let metrics = try client.scrape()
        #expect(metrics.value("silo_http_requests_total", ["route": "batch", "code": "200"]) == 1)
        #expect(metrics.value("silo_http_requests_total", ["route": "gcs_object", "code": "404"]) == 1)
    }

    @Test("an upload whose client goes away is counted as 499")
    func abortedUpload() throws {
        let server = try TestServer(backend: .memory)
        let client = server.client()
        try client.sendPartialAndDisconnect(
            method: "POST", target: bucketPath() + "?name=gone", headers: ["Content-Type": "text/plain"],
            body: pattern(100_000), sendBytes: 10_000)
        let observer = server.client()
        // The transport notices the disconnect when it next reads: scrape until it has (no time bound is asserted).
        var counted = 0.0
        for _ in 0..<500 where counted == 0 {
            counted = try observer.scrape().value(
                "silo_http_requests_total", ["route": "firebase_bucket", "code": "499"])
            if counted == 0 { usleep(10_000) }
        }
        #expect(counted == 1)
    }
}
