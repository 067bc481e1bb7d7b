import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The XML API's sub-resources on a live socket — `?acl` on buckets and objects and `?defaultObjectAcl` in
/// GCS's `<AccessControlList>`, bucket configuration (`?location`, `?storageClass`, `?versioning`, `?lifecycle`,
/// `?cors`, `?billing`) from the JSON API's bucket resource, and 501 for the sub-resources Silo does not serve —
/// none of which may ever answer with, or overwrite, the object's bytes.
@Suite struct XMLSubresourceTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
        #expect(try client.send(method: "PUT", target: "/\(bucket)").status == 200)
    }

    func code(_ response: TestResponse) -> String? { XMLText.value("Code", in: response.text[...]) }

    /// (scope type, the scope's ID / EmailAddress / Domain, permission) of each entry of an `<AccessControlList>`.
    func entries(_ response: TestResponse) -> [(type: String, name: String, permission: String)] {
        XMLText.elements("Entry", in: response.text[...]).map { entry in
            let scope = XMLText.elementsWithAttributes("Scope", in: entry).first
            let name = ["ID", "EmailAddress", "Domain"].lazy.compactMap { XMLText.value($0, in: scope?.content ?? "") }
                .first
            return (scope?.attributes["type"] ?? "", name ?? "", XMLText.value("Permission", in: entry) ?? "")
        }
    }

    func jsonACL(_ path: String) throws -> [String] {
        try client.get(path).json()["items"]?.arrayValue?.compactMap {
            guard let o = $0.objectValue else { return nil }
            return "\(o["entity"]?.stringValue ?? "")=\(o["role"]?.stringValue ?? "")"
        } ?? []
    }

    static let project = "000000000000"

    @Test("GET /{b}/{o}?acl answers the ACL, never the bytes; PUT replaces it from XML or x-goog-acl")
    func objectACL() throws {
        let uploaded = try client.send(method: "PUT", target: "/\(bucket)/doc.txt", body: bytes("secret bytes"))
        #expect(uploaded.status == 200)
        let read = try client.get("/\(bucket)/doc.txt?acl")
        #expect(read.status == 200 && read.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        #expect(!read.text.contains("secret bytes"))
        #expect(read.text.contains("<AccessControlList><Owner><ID>project-owners-\(Self.project)</ID></Owner>"))
        #expect(
            entries(read).map { "\($0.type):\($0.name):\($0.permission)" } == [
                "GroupById:project-owners-\(Self.project):FULL_CONTROL",
                "GroupById:project-editors-\(Self.project):FULL_CONTROL",
                "GroupById:project-viewers-\(Self.project):READ",
            ])

        // What gsutil's XML mode (boto) sends: the document, whitespace and a self-closing scope included.
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <AccessControlList>
              <Entries>
                <Entry><Scope type="GroupById"><ID>project-owners-\(Self.project)</ID></Scope>
                  <Permission>FULL_CONTROL</Permission></Entry>
                <Entry><Scope type="UserByEmail"><EmailAddress>ann@example.com</EmailAddress></Scope>
                  <Permission>FULL_CONTROL</Permission></Entry>
                <Entry><Scope type="GroupByDomain"><Domain>example.com</Domain></Scope><Permission>READ</Permission></Entry>
                <Entry><Scope type="AllUsers" /><Permission>READ</Permission></Entry>
              </Entries>
            </AccessControlList>
            """
        let put = try client.send(method: "PUT", target: "/\(bucket)/doc.txt?acl", body: bytes(document))
        #expect(put.status == 200, "\(put.text)")
        #expect(try client.get("/\(bucket)/doc.txt").body == bytes("secret bytes"), "the bytes are untouched")
        #expect(
            try jsonACL("/storage/v1/b/\(bucket)/o/doc.txt/acl") == [
                "project-owners-\(Self.project)=OWNER", "user-ann@example.com=OWNER", "domain-example.com=READER",
                "allUsers=READER",
            ])
        let again = try client.get("/\(bucket)/doc.txt?acl")
        #expect(entries(again).map(\.type) == ["GroupById", "UserByEmail", "GroupByDomain", "AllUsers"])
        #expect(try client.send(method: "HEAD", target: "/\(bucket)/doc.txt").headers["x-goog-metageneration"] == "2")

        // A canned ACL in x-goog-acl, with an empty body; the metageneration condition is checked.
        let stale = try client.send(
            method: "PUT", target: "/\(bucket)/doc.txt?acl",
            headers: ["x-goog-acl": "private", "x-goog-if-metageneration-match": "1"])
        #expect(stale.status == 412 && code(stale) == "PreconditionFailed")
        let canned = try client.send(
            method: "PUT", target: "/\(bucket)/doc.txt?acl",
            headers: ["x-goog-acl": "public-read", "x-goog-if-metageneration-match": "2"])
        #expect(canned.status == 200)
        #expect(try jsonACL("/storage/v1/b/\(bucket)/o/doc.txt/acl") == ["allUsers=READER"])
    }

    @Test("an object ACL PUT that GCS would refuse is a 400, and changes nothing")
    func badObjectACL() throws {
        #expect(try client.send(method: "PUT", target: "/\(bucket)/o", body: bytes("o")).status == 200)
        let before = try jsonACL("/storage/v1/b/\(bucket)/o/o/acl")
        for body in [
            "not xml at all",
            "<AccessControlList><Entries><Entry><Scope type=\"AllUsers\"/><Permission>WRITE</Permission></Entry>"
                + "</Entries></AccessControlList>",  // objects have no WRITER
            "<AccessControlList><Entries><Entry><Scope type=\"Everyone\"/><Permission>READ</Permission></Entry>"
                + "</Entries></AccessControlList>",
            "<AccessControlList><Entries><Entry><Scope type=\"UserByEmail\"></Scope><Permission>READ</Permission>"
                + "</Entry></Entries></AccessControlList>",
            "<AccessControlList><Entries><Entry><Scope type=\"AllUsers\"/><Permission>ALL</Permission></Entry>"
                + "</Entries></AccessControlList>",
            "<AccessControlList><Entries>"
                + String(
                    repeating: "<Entry><Scope type=\"AllUsers\"/><Permission>READ</Permission></Entry>", count: 101)
                + "</Entries></AccessControlList>",
        ] {
            let refused = try client.send(method: "PUT", target: "/\(bucket)/o?acl", body: bytes(body))
            #expect(refused.status == 400 && code(refused) == "InvalidArgument", "\(body.prefix(80))")
        }
        let badCanned = try client.send(method: "PUT", target: "/\(bucket)/o?acl", headers: ["x-goog-acl": "open"])
        #expect(badCanned.status == 400)
        #expect(try jsonACL("/storage/v1/b/\(bucket)/o/o/acl") == before)
        let delete = try client.send(method: "DELETE", target: "/\(bucket)/o?acl")
        #expect(delete.status == 405 && code(delete) == "MethodNotAllowed")
        #expect(delete.headers["Allow"] == "GET, HEAD, PUT")
        #expect(try client.get("/\(bucket)/o").body == bytes("o"), "DELETE ?acl deleted nothing")
        let missing = try client.get("/\(bucket)/nothing?acl")
        #expect(missing.status == 404 && code(missing) == "NoSuchKey")
        let noBucket = try client.get("/no-such-bucket-here/o?acl")
        #expect(noBucket.status == 404 && code(noBucket) == "NoSuchBucket")
    }

    @Test("bucket ?acl and ?defaultObjectAcl read and write the JSON API's bucket ACLs")
    func bucketACLs() throws {
        let read = try client.get("/\(bucket)?acl")
        #expect(read.status == 200 && !read.text.contains("ListBucketResult"))
        #expect(entries(read).map(\.permission) == ["FULL_CONTROL", "FULL_CONTROL", "READ"])
        #expect(
            try client.send(method: "PUT", target: "/\(bucket)?acl", headers: ["x-goog-acl": "public-read-write"])
                .status == 200)
        #expect(
            try jsonACL("/storage/v1/b/\(bucket)/acl") == ["project-owners-\(Self.project)=OWNER", "allUsers=WRITER"])
        let writers = try client.get("/\(bucket)?acl")
        #expect(entries(writers).last.map { "\($0.type):\($0.permission)" } == "AllUsers:WRITE")

        let defaults = """
            <AccessControlList><Entries><Entry><Scope type="AllAuthenticatedUsers"/><Permission>READ</Permission>\
            </Entry></Entries></AccessControlList>
            """
        #expect(
            try client.send(method: "PUT", target: "/\(bucket)?defaultObjectAcl", body: bytes(defaults)).status == 200)
        #expect(entries(try client.get("/\(bucket)?defaultObjectAcl")).map(\.type) == ["AllAuthenticatedUsers"])
        #expect(try client.send(method: "PUT", target: "/\(bucket)/new.txt", body: bytes("n")).status == 200)
        #expect(try jsonACL("/storage/v1/b/\(bucket)/o/new.txt/acl") == ["allAuthenticatedUsers=READER"])
        #expect(entries(try client.get("/\(bucket)/new.txt?acl")).map(\.type) == ["AllAuthenticatedUsers"])
    }

    @Test("with uniform bucket-level access on, ?acl is refused as the JSON API refuses it")
    func uniformAccess() throws {
        let body = bytes(#"{"iamConfiguration":{"uniformBucketLevelAccess":{"enabled":true}}}"#)
        let patched = try client.send(
            method: "PATCH", target: "/storage/v1/b/\(bucket)", headers: ["Content-Type": "application/json"],
            body: body)
        #expect(patched.status == 200)
        #expect(try client.send(method: "PUT", target: "/\(bucket)/u", body: bytes("u")).status == 200)
        #expect(try client.get("/\(bucket)/u?acl").status == 400)
        #expect(try client.get("/\(bucket)?acl").status == 400)
    }

    @Test(
        "?location, ?storageClass, ?lifecycle, ?cors, ?billing, ?logging, ?website, ?encryption, ?tagging read the bucket"
    )
    func bucketConfiguration() throws {
        let resource = #"""
            {"name":"configured","location":"eu","storageClass":"NEARLINE","billing":{"requesterPays":true},
             "lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"age":30,"isLive":false}},
               {"action":{"type":"SetStorageClass","storageClass":"COLDLINE"},
                "condition":{"matchesStorageClass":["NEARLINE","STANDARD"],"numNewerVersions":2}}]},
             "cors":[{"origin":["https://a.example"],"method":["GET","HEAD"],"responseHeader":["Content-Type"],
                      "maxAgeSeconds":3600}],
             "logging":{"logBucket":"logs","logObjectPrefix":"access/"},"website":{"mainPageSuffix":"index.html"},
             "encryption":{"defaultKmsKeyName":"projects/p/locations/eu/keyRings/r/cryptoKeys/k"},
             "labels":{"team":"storage","env":"test"}}
            """#
        let created = try client.send(
            method: "POST", target: "/storage/v1/b?project=demo", headers: ["Content-Type": "application/json"],
            body: bytes(resource))
        #expect(created.status == 200, "\(created.text)")
        func get(_ key: String) throws -> String {
            let answer = try client.get("/configured?\(key)")
            #expect(answer.status == 200, "\(key): \(answer.text)")
            return answer.text
        }
        let prolog = "<?xml version='1.0' encoding='UTF-8'?>"
        #expect(try get("location") == prolog + "<LocationConstraint>EU</LocationConstraint>")
        #expect(try get("storageClass") == prolog + "<StorageClass>NEARLINE</StorageClass>")
        #expect(
            try get("billing")
                == prolog + "<BillingConfiguration><RequesterPays>Enabled</RequesterPays></BillingConfiguration>")
        #expect(
            try get("lifecycle") == prolog + "<LifecycleConfiguration>"
                + "<Rule><Action><Delete/></Action><Condition><Age>30</Age><IsLive>false</IsLive></Condition></Rule>"
                + "<Rule><Action><SetStorageClass>COLDLINE</SetStorageClass></Action><Condition>"
                + "<MatchesStorageClass>NEARLINE</MatchesStorageClass><MatchesStorageClass>STANDARD"
                + "</MatchesStorageClass><NumberOfNewerVersions>2</NumberOfNewerVersions></Condition></Rule>"
                + "</LifecycleConfiguration>")
        #expect(
            try get("cors") == prolog + "<CorsConfig><Cors><Origins><Origin>https://a.example</Origin></Origins>"
                + "<Methods><Method>GET</Method><Method>HEAD</Method></Methods><ResponseHeaders><ResponseHeader>"
                + "Content-Type</ResponseHeader></ResponseHeaders><MaxAgeSec>3600</MaxAgeSec></Cors></CorsConfig>")
        #expect(
            try get("logging")
                == prolog + "<Logging><LogBucket>logs</LogBucket><LogObjectPrefix>access/</LogObjectPrefix></Logging>")
        let website =
            prolog + "<WebsiteConfiguration><MainPageSuffix>index.html</MainPageSuffix></WebsiteConfiguration>"
        #expect(try get("website") == website && get("websiteConfig") == website)
        #expect(
            try get("encryptionConfig") == prolog + "<EncryptionConfiguration><DefaultKmsKeyName>"
                + "projects/p/locations/eu/keyRings/r/cryptoKeys/k</DefaultKmsKeyName></EncryptionConfiguration>")
        #expect(
            try get("tagging") == prolog + "<Tagging><TagSet><Tag><Key>team</Key><Value>storage</Value></Tag>"
                + "<Tag><Key>env</Key><Value>test</Value></Tag></TagSet></Tagging>")
        // A bucket with GCS's defaults.
        #expect(try client.get("/\(bucket)?location").text.hasSuffix("<LocationConstraint>US</LocationConstraint>"))
        #expect(try client.get("/\(bucket)?lifecycle").text.hasSuffix("<LifecycleConfiguration/>"))
        #expect(try client.get("/\(bucket)?cors").text.hasSuffix("<CorsConfig/>"))
        #expect(try client.get("/\(bucket)?billing").text.contains("<RequesterPays>Disabled</RequesterPays>"))
        for (key, empty) in [
            ("logging", "<Logging/>"), ("websiteConfig", "<WebsiteConfiguration/>"),
            ("encryption", "<EncryptionConfiguration/>"), ("tagging", "<Tagging><TagSet/></Tagging>"),
        ] {
            #expect(try client.get("/\(bucket)?\(key)").text.hasSuffix(empty), "\(key)")
        }
        // Written through the JSON API only.
        let put = try client.send(
            method: "PUT", target: "/configured?lifecycle", body: bytes("<LifecycleConfiguration/>"))
        #expect(put.status == 501 && code(put) == "NotImplemented")
        #expect(try get("lifecycle").contains("<Age>30</Age>"))
        #expect(try client.get("/no-such-bucket-here?location").status == 404)
    }

    @Test("?versioning reads and writes the bucket's versioning, as the JSON API's PATCH does")
    func versioning() throws {
        #expect(try client.get("/\(bucket)?versioning").text.hasSuffix("<VersioningConfiguration/>"))
        let enable = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"
        #expect(try client.send(method: "PUT", target: "/\(bucket)?versioning", body: bytes(enable)).status == 200)
        #expect(try client.get("/\(bucket)?versioning").text.hasSuffix(enable))
        let json = try client.get("/storage/v1/b/\(bucket)").json()
        #expect(json["versioning"]?.objectValue?["enabled"] == .bool(true))
        let suspend =
            #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
            + "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>"
        #expect(try client.send(method: "PUT", target: "/\(bucket)?versioning", body: bytes(suspend)).status == 200)
        #expect(try client.get("/\(bucket)?versioning").text.hasSuffix("<VersioningConfiguration/>"))
        for bad in ["", "<VersioningConfiguration><Status>On</Status></VersioningConfiguration>"] {
            let refused = try client.send(method: "PUT", target: "/\(bucket)?versioning", body: bytes(bad))
            #expect(refused.status == 400, "\(bad)")
        }
        let delete = try client.send(method: "DELETE", target: "/\(bucket)?versioning")
        #expect(delete.status == 405 && delete.headers["Allow"] == "GET, HEAD, PUT")
        #expect(try client.send(method: "HEAD", target: "/\(bucket)").status == 200, "the bucket is still there")
    }

    @Test("sub-resources Silo does not serve answer 501 and never read or write the object")
    func unserved() throws {
        #expect(try client.send(method: "PUT", target: "/\(bucket)/keep.txt", body: bytes("original")).status == 200)
        for key in ["tagging", "retention", "legalHold", "encryption", "website", "logging", "torrent", "cors"] {
            for method in ["GET", "PUT", "DELETE"] {
                let answer = try client.send(method: method, target: "/\(bucket)/keep.txt?\(key)", body: bytes("evil"))
                #expect(answer.status == 501 && code(answer) == "NotImplemented", "\(method) ?\(key)")
                #expect(!answer.text.contains("original"))
            }
        }
        for key in ["retention", "policy", "replication", "notification", "object-lock"] {
            let answer = try client.get("/\(bucket)?\(key)")
            #expect(answer.status == 501 && code(answer) == "NotImplemented", "?\(key)")
        }
        // A sub-resource key anywhere in the query, with or without a value.
        #expect(try client.get("/\(bucket)/keep.txt?generation=1&tagging=").status == 501)
        #expect(try client.get("/\(bucket)/keep.txt").body == bytes("original"))
        #expect(try client.send(method: "DELETE", target: "/\(bucket)?tagging").status == 501)
        #expect(try client.send(method: "PUT", target: "/\(bucket)?logging", body: bytes("<Logging/>")).status == 501)
        #expect(try client.send(method: "HEAD", target: "/\(bucket)").status == 200)
    }
}

/// On a secured server a sub-resource is the owner's: the public read GCS grants an object (or a bucket's listing)
/// does not extend to its ACL or configuration.
@Suite struct XMLSubresourceAccessTests {
    @Test("an anonymous caller reads a public object but not its ?acl; the admin reads both")
    func ownerOnly() throws {
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let key = "xml-subresource-admin-key-0123456789"
        var auth = TokenVerifier.Configuration()
        auth.adminKeys = try AdminKeys(keys: [key])
        let server = try TestServer(configuration: configuration, credentials: TokenVerifier(auth))
        let client = server.client()
        let admin: HTTPHeaders = ["Authorization": "Bearer \(key)"]
        #expect(try client.send(method: "PUT", target: "/\(bucket)", headers: admin).status == 200)
        var publicRead = admin
        publicRead.add("x-goog-acl", "public-read")
        #expect(
            try client.send(method: "PUT", target: "/\(bucket)/open.txt", headers: publicRead, body: bytes("open"))
                .status == 200)
        #expect(try client.get("/\(bucket)/open.txt").body == bytes("open"))
        for target in ["/\(bucket)/open.txt?acl", "/\(bucket)?acl", "/\(bucket)?location", "/\(bucket)?versioning"] {
            let refused = try client.get(target)
            #expect(refused.status == 401, "\(target)")
            #expect(XMLText.value("Code", in: refused.text[...]) == "AuthenticationRequired")
            #expect(try client.get(target, headers: admin).status == 200, "\(target)")
        }
        let put = try client.send(
            method: "PUT", target: "/\(bucket)/open.txt?acl", headers: ["x-goog-acl": "private"])
        #expect(put.status == 401)
    }
}

/// With service accounts, IAM decides the sub-resources as it decides the JSON API's calls for the same things:
/// reading an object is not reading its ACL, and a bucket's configuration is `storage.buckets.get`.
@Suite struct XMLSubresourceIAMTests {
    @Test("objectViewer reads the object but not its ?acl; bucketViewer reads ?location; admin roles read ?acl")
    func permissions() throws {
        let s = try SecuredServer()
        try s.put("doc.txt", "bytes")
        let reader = s.bearer(try s.token(SecuredServer.reader))
        let writer = s.bearer(try s.token(SecuredServer.writer))
        try s.bind([
            ("roles/storage.objectViewer", ["serviceAccount:\(SecuredServer.reader.email)"]),
            ("roles/storage.bucketViewer", ["serviceAccount:\(SecuredServer.reader.email)"]),
            ("roles/storage.legacyBucketOwner", ["serviceAccount:\(SecuredServer.writer.email)"]),
            ("roles/storage.objectAdmin", ["serviceAccount:\(SecuredServer.writer.email)"]),
        ])
        let object = "/\(s.bucketName)/doc.txt"
        #expect(try s.send("GET", object, headers: reader).status == 200)
        for target in [object + "?acl", "/\(s.bucketName)?acl", "/\(s.bucketName)?defaultObjectAcl"] {
            let refused = try s.send("GET", target, headers: reader)
            #expect(
                refused.status == 403 && XMLText.value("Code", in: refused.text[...]) == "AccessDenied", "\(target)")
            #expect(try s.send("GET", target, headers: writer).status == 200, "\(target)")
        }
        #expect(try s.send("GET", "/\(s.bucketName)?location", headers: reader).status == 200)
        let enable = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"
        #expect(try s.send("PUT", "/\(s.bucketName)?versioning", enable, headers: reader).status == 403)
        #expect(try s.send("PUT", "/\(s.bucketName)?versioning", enable, headers: writer).status == 200)
        #expect(try s.send("GET", "/\(s.bucketName)?tagging", headers: reader).status == 200)
        #expect(try s.send("GET", "/\(s.bucketName)?policy", headers: writer).status == 403, "unserved: admin only")
        var listBuckets = writer
        listBuckets.add("x-goog-project-id", "demo")
        #expect(try s.send("GET", "/", headers: listBuckets).status == 403, "a project permission: admin only")
    }
}
