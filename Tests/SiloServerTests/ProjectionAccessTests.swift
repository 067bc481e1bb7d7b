import SiloCore
import SiloHTTP
import SiloTesting
import SiloWire
import Testing

/// `projection=full` adds `acl` and `owner` to objects and buckets. GCS requires `storage.objects.getIamPolicy`
/// (`storage.buckets.getIamPolicy` for buckets) for them — "only required if projection is full" — and answers a
/// caller without it with the resource, minus what it may not read (the JSON API "won't return acls as part of the
/// response" then: gsutil's `ls -L` prints "ACCESS DENIED" for such an object's ACL). The same caller gets 401/403 on
/// `…/acl` and on the XML `?acl`, so the projection must not hand it the ACL either.
@Suite struct ProjectionAccessTests {
    let s: SecuredServer

    init() throws { s = try SecuredServer() }

    var writer: TestServiceAccount { SecuredServer.writer }

    @Test("objects get: a public object's ACL and owner go only to callers who may read its ACL")
    func objectGet() throws {
        #expect(try s.upload("public.txt", "p", query: "predefinedAcl=publicRead", headers: s.admin).status == 200)
        let anonymous = try s.send("GET", "\(s.objects)/public.txt?projection=full")
        #expect(anonymous.status == 200)
        #expect(try anonymous.json()["acl"] == nil && anonymous.json()["owner"] == nil, "\(anonymous.text)")
        #expect(try anonymous.json()["name"]?.stringValue == "public.txt", "the rest of the resource is there")
        #expect(try s.send("GET", "\(s.objects)/public.txt/acl").status == 401, "as on the ACL route")
        let admin = try s.send("GET", "\(s.objects)/public.txt?projection=full", headers: s.admin)
        #expect(try admin.json()["acl"]?.arrayValue?.isEmpty == false)
    }

    @Test("objects list: each item's ACL is shown by that item's own permission")
    func objectList() throws {
        try s.bind([
            ("roles/storage.objectViewer", ["allUsers"]),
            ("roles/storage.objectCreator", ["serviceAccount:\(writer.email)"]),
            ("roles/storage.legacyBucketReader", ["serviceAccount:\(writer.email)"]),
        ])
        try s.put("theirs.txt", "theirs")
        let token = try s.token(writer)
        #expect(try s.upload("mine.txt", "mine", headers: s.bearer(token)).status == 200)
        let anonymous = try s.send("GET", "\(s.objects)?projection=full").json()
        let items = anonymous["items"]?.arrayValue ?? []
        #expect(items.count == 2)
        #expect(items.allSatisfy { $0.objectValue?["acl"] == nil && $0.objectValue?["owner"] == nil })
        // The writer owns what it created (its ACL names it OWNER), and that item's ACL only.
        let listed = try s.send("GET", "\(s.objects)?projection=full", headers: s.bearer(token)).json()
        var acls: [String: Bool] = [:]
        for item in listed["items"]?.arrayValue ?? [] {
            acls[item.objectValue?["name"]?.stringValue ?? "?"] = item.objectValue?["acl"] != nil
        }
        #expect(acls == ["mine.txt": true, "theirs.txt": false])
    }

    @Test("buckets get: acl, defaultObjectAcl and owner need storage.buckets.getIamPolicy")
    func bucketGet() throws {
        try s.bind([
            ("roles/storage.bucketViewer", ["serviceAccount:\(writer.email)"]),
            ("roles/storage.admin", ["serviceAccount:\(SecuredServer.reader.email)"]),
        ])
        let viewer = try s.send(
            "GET", "/storage/v1/b/\(s.bucketName)?projection=full", headers: s.bearer(try s.token(writer)))
        #expect(viewer.status == 200)
        let fields = try viewer.json()
        #expect(fields["acl"] == nil && fields["defaultObjectAcl"] == nil && fields["owner"] == nil, "\(viewer.text)")
        let admin = try s.send(
            "GET", "/storage/v1/b/\(s.bucketName)?projection=full",
            headers: s.bearer(try s.token(SecuredServer.reader)))
        #expect(try admin.json()["acl"]?.arrayValue?.isEmpty == false)
        #expect(try admin.json()["defaultObjectAcl"] != nil)
    }

    @Test("a listing of versions shows each generation's ACL by that generation's own ACL")
    func versionsList() throws {
        try s.versioned()
        try s.put("doc.txt", "admin's")
        try s.bind([("roles/storage.legacyBucketWriter", ["serviceAccount:\(writer.email)"])])
        let token = try s.token(writer)
        #expect(try s.upload("doc.txt", "writer's", headers: s.bearer(token)).status == 200)
        let listed = try s.send("GET", "\(s.objects)?versions=true&projection=full", headers: s.bearer(token)).json()
        let items = listed["items"]?.arrayValue ?? []
        #expect(items.count == 2)
        let shown = items.filter { $0.objectValue?["acl"] != nil }
        #expect(shown.count == 1, "only the writer's own generation")
        #expect(shown.first?.objectValue?["owner"]?.objectValue?["entity"]?.stringValue == "user-\(writer.email)")
    }
}
