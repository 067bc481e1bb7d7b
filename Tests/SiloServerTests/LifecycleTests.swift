import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// A bucket's lifecycle rules, set through the GCS API on a live server and run by the maintenance pass
/// at a later clock — every condition GCS defines, both actions, holds respected.
@Suite struct LifecycleTests {
    let server: TestServer
    let client: HTTPTestClient
    let json: HTTPHeaders = ["Content-Type": "application/json"]
    let day: Int64 = 86_400 * 1_000_000

    init() throws {
        server = try TestServer()
        client = server.client()
    }

    func upload(_ bucket: String, _ name: String) throws -> JSONObject {
        let r = try client.send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=" + PercentCoding.encodeComponent(name),
            body: bytes(name))
        #expect(r.status == 200)
        return try r.json()
    }

    func object(_ bucket: String, _ name: String, generation: String? = nil) throws -> TestResponse {
        try client.get(
            "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name)
                + (generation.map { "?generation=\($0)" } ?? ""))
    }

    func later(days: Int64) -> Timestamp { Timestamp(microseconds: Timestamp.now().microseconds + days * day) }

    @Test("Delete and SetStorageClass by age, prefix, suffix, class and custom time; held objects stay")
    func liveRules() throws {
        let rules = """
            {"name":"lc","lifecycle":{"rule":[
              {"action":{"type":"Delete"},"condition":{"age":30,"matchesPrefix":["tmp/"]}},
              {"action":{"type":"SetStorageClass","storageClass":"NEARLINE"},
               "condition":{"age":0,"matchesSuffix":[".log"],"matchesStorageClass":["STANDARD"]}},
              {"action":{"type":"Delete"},"condition":{"daysSinceCustomTime":2}},
              {"action":{"type":"AbortIncompleteMultipartUpload"},"condition":{"age":1}}]}}
            """
        #expect(
            try client.send(method: "POST", target: "/storage/v1/b", headers: json, body: bytes(rules)).status == 200)
        for name in ["tmp/a", "tmp/held", "keep/a", "app.log", "custom"] { _ = try upload("lc", name) }
        let hold = try client.send(
            method: "PATCH", target: "/storage/v1/b/lc/o/" + PercentCoding.encodeComponent("tmp/held"), headers: json,
            body: bytes(#"{"temporaryHold":true}"#))
        #expect(hold.status == 200)
        let custom = Timestamp(microseconds: Timestamp.now().microseconds + 10 * day).rfc3339
        let patched = try client.send(
            method: "PATCH", target: "/storage/v1/b/lc/o/custom", headers: json,
            body: bytes(#"{"customTime":"\#(custom)"}"#))
        #expect(patched.status == 200)
        // Day 1: only the storage class rule is due.
        _ = server.app.collectGarbage(graceSeconds: 0, now: later(days: 1))
        #expect(try object("lc", "app.log").string("storageClass") == "NEARLINE")
        #expect(try object("lc", "keep/a").string("storageClass") == "STANDARD")
        #expect(try object("lc", "tmp/a").status == 200)
        // Day 11: two days after the custom time.
        _ = server.app.collectGarbage(graceSeconds: 0, now: later(days: 12))
        #expect(try object("lc", "custom").status == 404)
        #expect(try object("lc", "tmp/a").status == 200)
        // Day 31: the age rule; the held object survives it.
        _ = server.app.collectGarbage(graceSeconds: 0, now: later(days: 31))
        #expect(try object("lc", "tmp/a").status == 404)
        #expect(try object("lc", "tmp/held").status == 200)
        #expect(try object("lc", "keep/a").status == 200 && (try object("lc", "app.log")).status == 200)
    }

    @Test("noncurrent versions: isLive, numNewerVersions, daysSinceNoncurrentTime, createdBefore")
    func noncurrentRules() throws {
        let rules = """
            {"name":"lcv","versioning":{"enabled":true},"lifecycle":{"rule":[
              {"action":{"type":"Delete"},"condition":{"isLive":false,"numNewerVersions":2}},
              {"action":{"type":"Delete"},"condition":{"isLive":false,"daysSinceNoncurrentTime":7,
               "createdBefore":"2999-01-01"}}]}}
            """
        #expect(
            try client.send(method: "POST", target: "/storage/v1/b", headers: json, body: bytes(rules)).status == 200)
        var generations: [String] = []
        for _ in 0..<4 { generations.append(try upload("lcv", "v")["generation"]?.stringValue ?? "") }
        _ = server.app.collectGarbage(graceSeconds: 0, now: later(days: 1))
        // Two or more newer versions: the two oldest go; the newest noncurrent one and the live one stay.
        #expect(try object("lcv", "v", generation: generations[0]).status == 404)
        #expect(try object("lcv", "v", generation: generations[1]).status == 404)
        #expect(try object("lcv", "v", generation: generations[2]).status == 200)
        _ = server.app.collectGarbage(graceSeconds: 0, now: later(days: 8))
        #expect(try object("lcv", "v", generation: generations[2]).status == 404)
        #expect(try object("lcv", "v").string("generation") == generations[3], "the live version is never isLive:false")
    }
}
