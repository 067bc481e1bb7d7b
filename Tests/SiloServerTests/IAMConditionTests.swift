import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTesting
import SiloWire
import Testing

/// IAM Conditions on a bucket policy, as GCS takes them: version 3 to write or read a policy that has them, and
/// conditions on `request.time` and `resource.name` deciding what a binding grants, request by request.
@Suite struct IAMConditionTests {
    let s: SecuredServer

    init() throws {
        s = try SecuredServer()
        let ubla = try s.send(
            "PATCH", "/storage/v1/b/\(s.bucketName)",
            #"{"iamConfiguration":{"uniformBucketLevelAccess":{"enabled":true}}}"#, headers: s.admin)
        #expect(ubla.status == 200, "\(ubla.text)")
    }

    var iam: String { "/storage/v1/b/\(s.bucketName)/iam" }
    var prefix: String { "projects/_/buckets/\(s.bucketName)/objects/" }

    func policy(version: Int, _ bindings: [(role: String, member: String, expression: String?)]) -> String {
        JSONValue.object([
            "version": .number(String(version)),
            "bindings": .array(
                bindings.map { binding in
                    var o: JSONObject = [
                        "role": .string(binding.role), "members": .array([.string(binding.member)]),
                    ]
                    if let expression = binding.expression {
                        o["condition"] = .object([
                            "title": .string("t"), "description": .string("d"), "expression": .string(expression),
                        ])
                    }
                    return .object(o)
                }),
        ]).serializedString
    }

    @Test("a conditional policy is written and read as version 3 only; version 1 is a 400 both ways")
    func versionRules() throws {
        let reader = "serviceAccount:\(SecuredServer.reader.email)"
        let conditional = [
            (
                role: "roles/storage.objectViewer", member: reader,
                expression: #"resource.name.startsWith("x")"# as String?
            )
        ]
        #expect(try s.send("PUT", iam, policy(version: 1, conditional), headers: s.admin).status == 400)
        #expect(try s.send("PUT", iam, policy(version: 2, conditional), headers: s.admin).status == 400)
        let unknown = [
            (role: "roles/storage.objectViewer", member: reader, expression: "request.auth.uid == 'a'" as String?)
        ]
        #expect(try s.send("PUT", iam, policy(version: 3, unknown), headers: s.admin).status == 400)
        let set = try s.send("PUT", iam, policy(version: 3, conditional), headers: s.admin)
        #expect(set.status == 200, "\(set.text)")
        #expect(try set.json()["version"]?.int64Value == 3)

        #expect(try s.send("GET", iam, headers: s.admin).status == 400)
        #expect(try s.send("GET", iam + "?optionsRequestedPolicyVersion=1", headers: s.admin).status == 400)
        let read = try s.send("GET", iam + "?optionsRequestedPolicyVersion=3", headers: s.admin)
        #expect(read.status == 200)
        let binding = try read.json()["bindings"]?.arrayValue?.first?.objectValue
        #expect(try read.json()["version"]?.int64Value == 3)
        #expect(binding?["condition"]?.objectValue?["title"]?.stringValue == "t")
        #expect(binding?["condition"]?.objectValue?["expression"]?.stringValue == #"resource.name.startsWith("x")"#)
        // Replacing a conditional policy as version 1 would drop conditions a version-1 client never saw.
        let plain = [(role: "roles/storage.objectViewer", member: reader, expression: nil as String?)]
        #expect(try s.send("PUT", iam, policy(version: 1, plain), headers: s.admin).status == 400)
        #expect(try s.send("PUT", iam, policy(version: 3, plain), headers: s.admin).status == 200)
        let unconditional = try s.send("GET", iam, headers: s.admin)
        #expect(try unconditional.status == 200 && unconditional.json()["version"]?.int64Value == 1)
    }

    @Test("conditions on resource.name and request.time decide what a binding grants")
    func enforced() throws {
        for name in ["open/a.txt", "open/b.secret", "closed/c.txt"] { try s.put(name, name) }
        let reader = "serviceAccount:\(SecuredServer.reader.email)"
        let writer = "serviceAccount:\(SecuredServer.writer.email)"
        let set = try s.send(
            "PUT", iam,
            policy(
                version: 3,
                [
                    ("roles/storage.objectViewer", reader, #"resource.name.startsWith("\#(prefix)open/")"#),
                    ("roles/storage.objectCreator", writer, #"request.time < timestamp("2001-01-01T00:00:00Z")"#),
                    (
                        "roles/storage.objectViewer", writer,
                        #"request.time < timestamp("2999-01-01T00:00:00Z") && !(resource.name.endsWith(".secret") || resource.name == "\#(prefix)open/a.txt")"#
                    ),
                ]), headers: s.admin)
        #expect(set.status == 200, "\(set.text)")
        let readerToken = s.bearer(try s.token(SecuredServer.reader))
        let writerToken = s.bearer(try s.token(SecuredServer.writer))
        func media(_ name: String) -> String { "\(s.objects)/" + PercentCoding.encodeComponent(name) + "?alt=media" }

        #expect(try s.send("GET", media("open/a.txt"), headers: readerToken).text == "open/a.txt")
        #expect(try s.send("GET", media("open/b.secret"), headers: readerToken).status == 200)
        #expect(try s.send("GET", media("closed/c.txt"), headers: readerToken).status == 403)
        // objects.list is asked of the bucket, which no object-name condition matches.
        #expect(try s.send("GET", s.objects, headers: readerToken).status == 403)
        // The XML API decides the same way.
        #expect(try s.send("GET", "/\(s.bucketName)/open/a.txt", headers: readerToken).status == 200)
        #expect(try s.send("GET", "/\(s.bucketName)/closed/c.txt", headers: readerToken).status == 403)

        #expect(try s.send("GET", media("closed/c.txt"), headers: writerToken).status == 200)
        #expect(try s.send("GET", media("open/b.secret"), headers: writerToken).status == 403)
        #expect(try s.send("GET", media("open/a.txt"), headers: writerToken).status == 403)
        let expired = try s.send(
            "POST", "/upload/storage/v1/b/\(s.bucketName)/o?uploadType=media&name=new.txt", "n", headers: writerToken)
        #expect(expired.status == 403, "a binding whose time has passed grants nothing")
    }
}
