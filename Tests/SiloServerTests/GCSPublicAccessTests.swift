import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// On a secured server the GCS API is admin-only, except reads GCS grants the public — an object
/// whose ACL names `allUsers`, a bucket whose IAM policy gives `allUsers` a viewer role. Uniform bucket-level
/// access turns the ACL half off. Writes stay admin-only whatever the ACL says.
@Suite struct GCSPublicAccessTests {
    let server: TestServer
    let client: HTTPTestClient
    let admin: HTTPHeaders = ["Authorization": "Bearer owner", "Content-Type": "application/json"]

    init() throws {
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        server = try TestServer(configuration: configuration)
        client = server.client()
    }

    var objects: String { "/storage/v1/b/\(bucket)/o" }

    func send(_ method: String, _ target: String, _ json: String = "", headers: HTTPHeaders? = nil) throws
        -> TestResponse
    {
        try client.send(method: method, target: target, headers: headers ?? admin, body: bytes(json))
    }

    @Test("allUsers READER on an object's ACL opens its metadata and bytes, and nothing else")
    func objectACL() throws {
        #expect(try send("POST", "/storage/v1/b", #"{"name":"\#(bucket)"}"#).status == 200)
        for name in ["public.txt", "private.txt"] {
            let upload = try client.send(
                method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=\(name)",
                headers: admin, body: bytes("bytes of \(name)"))
            #expect(upload.status == 200)
        }
        #expect(try client.get("\(objects)/public.txt").status == 401)
        let grant = try send("PATCH", "\(objects)/public.txt", #"{"acl":[{"entity":"allUsers","role":"READER"}]}"#)
        #expect(grant.status == 200)
        #expect(try client.get("\(objects)/public.txt").status == 200)
        let media = try client.get("\(objects)/public.txt?alt=media")
        #expect(media.status == 200 && media.body == bytes("bytes of public.txt"))
        #expect(try client.get("\(objects)/private.txt").status == 401)
        #expect(try client.get(objects).status == 401, "an object's ACL does not open the listing")
        let write = try send("PATCH", "\(objects)/public.txt", #"{"contentType":"text/html"}"#, headers: [:])
        #expect(write.status == 401)
        #expect(try client.send(method: "DELETE", target: "\(objects)/public.txt").status == 401)
        // Uniform bucket-level access: the ACL no longer decides.
        let ubla = try send(
            "PATCH", "/storage/v1/b/\(bucket)", #"{"iamConfiguration":{"uniformBucketLevelAccess":{"enabled":true}}}"#)
        #expect(ubla.status == 200)
        #expect(try client.get("\(objects)/public.txt").status == 401)
    }

    @Test("an IAM viewer binding for allUsers opens every object and the listing; enforced PAP closes and refuses it")
    func bucketIAM() throws {
        #expect(try send("POST", "/storage/v1/b", #"{"name":"\#(bucket)"}"#).status == 200)
        let upload = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=a.txt", headers: admin,
            body: bytes("a"))
        #expect(upload.status == 200)
        #expect(try client.get(objects).status == 401)
        let policy = try send(
            "PUT", "/storage/v1/b/\(bucket)/iam",
            #"{"bindings":[{"role":"roles/storage.objectViewer","members":["allUsers"]}]}"#)
        #expect(policy.status == 200)
        let listed = try client.get(objects)
        #expect(listed.status == 200)
        #expect(try listed.json()["items"]?.arrayValue?.count == 1)
        #expect(try client.get("\(objects)/a.txt?alt=media").body == bytes("a"))
        #expect(try client.get("/storage/v1/b/\(bucket)/iam").status == 401, "the policy itself stays private")
        let pap = try send(
            "PATCH", "/storage/v1/b/\(bucket)", #"{"iamConfiguration":{"publicAccessPrevention":"enforced"}}"#)
        #expect(pap.status == 200)
        #expect(try client.get(objects).status == 401, "enforced prevention closes what the policy opened")
        let refused = try send(
            "PUT", "/storage/v1/b/\(bucket)/iam",
            #"{"bindings":[{"role":"roles/storage.objectViewer","members":["allUsers"]}]}"#)
        #expect(refused.status == 412)
    }
}
