import SiloCore
import SiloHTTP
import SiloTesting
import SiloWire
import Testing

/// Every generation has its own ACL, and access to generation G is decided by G's ACL (and bucket IAM) — never by
/// another generation's (GCS: objectAccessControls take `generation`; "Object ACLs apply to a single object
/// generation"). Each path a request can address an older or soft-deleted generation by, on the JSON and XML APIs.
@Suite struct GenerationAccessTests {
    let s: SecuredServer
    let name = "doc.txt"

    init() throws {
        s = try SecuredServer()
        try s.versioned()
    }

    var writer: TestServiceAccount { SecuredServer.writer }
    var object: String { "\(s.objects)/\(name)" }
    var xmlObject: String { "/\(s.bucketName)/\(name)" }

    /// Generation 1, private, stored by the admin; then a caller that may create and delete objects but not read
    /// them (`legacyBucketWriter`) overwrites it, which makes it OWNER of the new live version (as in GCS). Returns
    /// generation 1 and that caller's token.
    func overwrittenByWriter() throws -> (old: String, token: String) {
        let old = try s.generation(try s.upload(name, "private v1", headers: s.admin))
        try s.bind([("roles/storage.legacyBucketWriter", ["serviceAccount:\(writer.email)"])])
        let token = try s.token(writer)
        #expect(try s.upload(name, "writer v2", headers: s.bearer(token)).status == 200)
        // Its own version is its to read: the refusals that follow are about the version, not the caller.
        #expect(try s.send("GET", "\(object)?alt=media", headers: s.bearer(token)).text == "writer v2")
        return (old, token)
    }

    @Test("a public live version does not open the private generation before it, to anyone (media, metadata, XML)")
    func publicOverwriteKeepsOldPrivate() throws {
        let old = try s.generation(try s.upload(name, "private v1", headers: s.admin))
        #expect(try s.upload(name, "public v2", query: "predefinedAcl=publicRead", headers: s.admin).status == 200)
        #expect(try s.send("GET", "\(object)?alt=media").text == "public v2", "the live version is public")
        #expect(try s.send("GET", "\(object)?alt=media&generation=\(old)").status == 401)
        #expect(try s.send("GET", "\(object)?generation=\(old)").status == 401)
        #expect(try s.send("GET", "\(xmlObject)?generation=\(old)").status == 401)
        #expect(try s.send("HEAD", "\(xmlObject)?generation=\(old)").status == 401)
        #expect(try s.send("GET", "\(object)?alt=media&generation=\(old)", headers: s.admin).text == "private v1")
    }

    @Test("read: the new version's OWNER may not read the previous owner's generation (JSON media, XML GET)")
    func read() throws {
        let (old, token) = try overwrittenByWriter()
        let media = try s.send("GET", "\(object)?alt=media&generation=\(old)", headers: s.bearer(token))
        #expect(media.status == 403 && !media.text.contains("private v1"))
        let xml = try s.send("GET", "\(xmlObject)?generation=\(old)", headers: s.bearer(token))
        #expect(xml.status == 403 && xml.text.contains("AccessDenied"))
    }

    @Test("metadata: get and patch of another generation are decided by that generation's ACL")
    func metadata() throws {
        let (old, token) = try overwrittenByWriter()
        #expect(try s.send("GET", "\(object)?generation=\(old)", headers: s.bearer(token)).status == 403)
        let patch = try s.send(
            "PATCH", "\(object)?generation=\(old)", #"{"metadata":{"taken":"yes"}}"#, headers: s.bearer(token))
        #expect(patch.status == 403)
        let kept = try s.send("GET", "\(object)?generation=\(old)", headers: s.admin)
        #expect(try kept.json()["metadata"] == nil, "generation \(old) is unchanged")
    }

    @Test("ACL: reading or granting on another generation is refused (JSON acl, XML ?acl)")
    func acl() throws {
        let (old, token) = try overwrittenByWriter()
        #expect(try s.send("GET", "\(object)/acl?generation=\(old)", headers: s.bearer(token)).status == 403)
        let grant = try s.send(
            "POST", "\(object)/acl?generation=\(old)", #"{"entity":"allUsers","role":"READER"}"#,
            headers: s.bearer(token))
        #expect(grant.status == 403)
        #expect(try s.send("GET", "\(xmlObject)?acl&generation=\(old)", headers: s.bearer(token)).status == 403)
        var canned = s.bearer(token)
        canned.set("x-goog-acl", "public-read")
        #expect(try s.send("PUT", "\(xmlObject)?acl&generation=\(old)", headers: canned).status == 403)
        #expect(try s.send("GET", "\(object)?alt=media&generation=\(old)").status == 401, "still private")
        // Its own generation's ACL is its own to change.
        let own = try s.send(
            "POST", "\(object)/acl", #"{"entity":"allUsers","role":"READER"}"#, headers: s.bearer(token))
        #expect(own.status == 200, "\(own.text)")
    }

    @Test("copy: copyTo with sourceGeneration and the XML x-goog-copy-source-generation read that generation")
    func copy() throws {
        let (old, token) = try overwrittenByWriter()
        let json = try s.send(
            "POST", "\(object)/copyTo/b/\(s.bucketName)/o/stolen.txt?sourceGeneration=\(old)", "{}",
            headers: s.bearer(token))
        #expect(json.status == 403)
        var headers = s.bearer(token)
        headers.set("x-goog-copy-source", "/\(s.bucketName)/\(name)")
        headers.set("x-goog-copy-source-generation", old)
        #expect(try s.send("PUT", "/\(s.bucketName)/stolen2.txt", headers: headers).status == 403)
        for stolen in ["stolen.txt", "stolen2.txt"] {
            #expect(try s.send("GET", "\(s.objects)/\(stolen)", headers: s.admin).status == 404)
        }
    }

    @Test("rewrite: rewriteTo with sourceGeneration reads that generation")
    func rewrite() throws {
        let (old, token) = try overwrittenByWriter()
        let response = try s.send(
            "POST", "\(object)/rewriteTo/b/\(s.bucketName)/o/stolen.txt?sourceGeneration=\(old)", "{}",
            headers: s.bearer(token))
        #expect(response.status == 403)
        #expect(try s.send("GET", "\(s.objects)/stolen.txt", headers: s.admin).status == 404)
    }

    @Test("compose: each source is read as the generation it names, by that generation's ACL")
    func compose() throws {
        let (old, token) = try overwrittenByWriter()
        let body = #"{"sourceObjects":[{"name":"\#(name)","generation":"\#(old)"}]}"#
        let response = try s.send("POST", "\(s.objects)/stolen.txt/compose", body, headers: s.bearer(token))
        #expect(response.status == 403)
        #expect(try s.send("GET", "\(s.objects)/stolen.txt", headers: s.admin).status == 404)
        // The live version, which the writer owns, composes.
        let own = #"{"sourceObjects":[{"name":"\#(name)"}]}"#
        #expect(try s.send("POST", "\(s.objects)/mine.txt/compose", own, headers: s.bearer(token)).status == 200)
    }

    @Test("a change decided on the live version by its own ACL lands on that version, not on one that replaced it")
    func decidedVersionIsTheChangedOne() throws {
        try s.bind([("roles/storage.legacyBucketWriter", ["serviceAccount:\(writer.email)"])])
        let token = try s.token(writer)
        let mine = try s.generation(try s.upload(name, "writer's", headers: s.bearer(token)))
        // The writer grants allUsers on what it owns; the owner replaces the object before the grant's body arrives.
        let grant = try s.raced(
            "POST", "\(object)/acl", Array(#"{"entity":"allUsers","role":"READER"}"#.utf8), headers: s.bearer(token)
        ) { _ = try s.upload(name, "owner's, private", headers: s.admin) }
        #expect(grant.status == 200, "\(grant.text)")
        #expect(try s.bytes(name) == "owner's, private")
        #expect(try s.send("GET", "\(object)?alt=media").status == 401, "the owner's new version stays private")
        #expect(try s.send("GET", "\(object)?alt=media&generation=\(mine)").text == "writer's")
        #expect(try s.upload(name, "writer's again", headers: s.bearer(token)).status == 200)
        let patch = try s.raced(
            "PATCH", object, Array(#"{"metadata":{"by":"writer"}}"#.utf8), headers: s.bearer(token)
        ) { _ = try s.upload(name, "owner's again", headers: s.admin) }
        #expect(patch.status == 200, "\(patch.text)")
        #expect(try s.bytes(name) == "owner's again")
        #expect(try s.send("GET", object, headers: s.admin).json()["metadata"] == nil)
    }

    @Test("soft-deleted: softDeleted=true&generation= is decided by the soft-deleted version's own ACL")
    func softDeleted() throws {
        let (old, token) = try overwrittenByWriter()
        // Deleting the noncurrent generation makes it soft-deleted (the bucket keeps it 7 days, GCS's default).
        #expect(try s.send("DELETE", "\(object)?generation=\(old)", headers: s.admin).status == 204)
        let found = try s.send("GET", "\(object)?softDeleted=true&generation=\(old)", headers: s.admin)
        #expect(found.status == 200, "\(found.text)")
        let refused = try s.send("GET", "\(object)?softDeleted=true&generation=\(old)", headers: s.bearer(token))
        #expect(refused.status == 403)
    }

    @Test("restore: the restored object takes the bucket's default ACL, not the soft-deleted version's")
    func restore() throws {
        let old = try s.generation(try s.upload(name, "public v1", query: "predefinedAcl=publicRead", headers: s.admin))
        #expect(try s.send("DELETE", object, headers: s.admin).status == 204)
        #expect(try s.send("DELETE", "\(object)?generation=\(old)", headers: s.admin).status == 204)
        // objectUser may restore, create and delete, but not set ACLs.
        try s.bind([("roles/storage.objectUser", ["serviceAccount:\(writer.email)"])])
        let token = try s.token(writer)
        let keep = try s.send(
            "POST", "\(object)/restore?generation=\(old)&copySourceAcl=true", headers: s.bearer(token))
        #expect(keep.status == 403, "copySourceAcl needs the right to set that version's ACL")
        let restored = try s.send("POST", "\(object)/restore?generation=\(old)", headers: s.bearer(token))
        #expect(restored.status == 200, "\(restored.text)")
        #expect(try s.send("GET", "\(object)?alt=media").status == 401, "the old public ACL did not come back")
        #expect(try s.send("GET", "\(object)?alt=media", headers: s.admin).text == "public v1")
        // With copySourceAcl=true, a caller who may set ACLs keeps the version's own.
        let other = "\(s.objects)/other.txt"
        let kept = try s.generation(
            try s.upload("other.txt", "public too", query: "predefinedAcl=publicRead", headers: s.admin))
        #expect(try s.send("DELETE", other, headers: s.admin).status == 204)
        #expect(try s.send("DELETE", "\(other)?generation=\(kept)", headers: s.admin).status == 204)
        let keeping = try s.send("POST", "\(other)/restore?generation=\(kept)&copySourceAcl=true", headers: s.admin)
        #expect(keeping.status == 200, "\(keeping.text)")
        #expect(try s.send("GET", "\(other)?alt=media").text == "public too")
    }
}
