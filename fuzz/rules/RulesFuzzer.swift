// libFuzzer entry point for the rules compiler and evaluator, built and run by `fuzz/run rules SECONDS` with the
// SiloRules sources (SwiftPM cannot build fuzzers). Every input is tried twice: as a whole ruleset, and as the
// condition of an `allow` (so that mutations reach the expression evaluator without first having to form a
// valid ruleset). Anything that compiles is evaluated against a fixed set of requests.
import SiloCore
import SiloRules

private struct StubDocuments: DocumentSource {
    func document(at path: [String]) throws -> [String: RulesValue]? {
        if path.last == "alice" { return ["friends": .list([.string("bob")]), "n": .int(3)] }
        if path.last == "broken" { throw RulesFault("backend down") }
        return nil
    }
}

private let bucket = try! BucketName("B")
private let now = Timestamp(microseconds: 1_700_000_000_000_000)

private func object(_ name: String, metadata: [String: String]) -> ObjectRecord {
    ObjectRecord(
        bucket: bucket, name: try! ObjectName(name), generation: 1, metageneration: 1,
        blob: BlobSummary(size: 10, md5: Array(repeating: 1, count: 16), crc32c: 7),
        blobID: BlobID(rawValue: String(repeating: "b", count: 32))!,
        fields: ObjectFields(contentType: "image/png", customMetadata: metadata), timeCreated: now, updated: now)
}

private let requests: [AccessRequest] = {
    let user = Principal(
        scheme: "Firebase", credential: "x", uid: "u1",
        claimsJSON: #"{"sub":"u1","admin":true,"groupId":"g1","n":1.5,"firebase":{"sign_in_provider":"password"}}"#,
        isAdmin: false, verified: true)
    let existing = object("images/cat.png", metadata: ["owner": "u1", "visibility": "public"])
    return [
        AccessRequest(
            operation: .get, bucket: bucket, path: "images/cat.png", principal: user, resource: existing, time: now),
        AccessRequest(operation: .get, bucket: bucket, path: "users/alice/files/1", principal: nil, time: now),
        AccessRequest(operation: .list, bucket: bucket, path: "", principal: user, time: now),
        AccessRequest(operation: .list, bucket: bucket, path: "a/b", principal: user, time: now),
        AccessRequest(
            operation: .create, bucket: bucket, path: "images/cat.png", principal: user, resource: existing,
            proposedFields: ObjectFields(contentType: "image/jpeg", customMetadata: ["owner": "u2"]),
            proposedSize: 1000,
            time: now),
        AccessRequest(
            operation: .update, bucket: bucket, path: "images/cat.png", principal: user, resource: existing,
            proposedFields: ObjectFields(contentType: "image/png", customMetadata: ["caption": "x"]), proposedSize: 10,
            time: now),
        AccessRequest(operation: .delete, bucket: bucket, path: "a//b/c.txt", principal: nil, time: now),
    ]
}()

private func exercise(_ program: RulesProgram) {
    for (n, request) in requests.enumerated() {
        let options = RulesProgram.Options(trace: n % 2 == 0, explain: true, listChildMode: n == 3)
        _ = program.evaluate(request, documents: n % 3 == 0 ? nil : StubDocuments(), options: options)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func rulesFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        exercise(try RulesProgram.compile(source: text, fileName: "fuzz.rules"))
    } catch {
        _ = error.formatted
    }
    let wrapped =
        "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n    match /{path=**} {\n"
        + "      function f(a, b) { let c = a; return c == b || " + "(\(text)); }\n"
        + "      allow read, write: if f(request.auth, null) || (\(text));\n    }\n  }\n}\n"
    do {
        let program = try RulesProgram.compile(source: wrapped, fileName: "fuzz.rules")
        exercise(program)
    } catch {
        _ = error.formatted
    }
    return 0
}
