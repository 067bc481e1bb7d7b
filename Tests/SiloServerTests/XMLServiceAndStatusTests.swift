import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// `GET /`: the XML API's bucket listing when the request names a project (`x-goog-project-id`, as gsutil sends it),
/// the emulator probe otherwise; 405 and 416 in GCS's XML error shape.
@Suite struct XMLServiceAndStatusTests {
    @Test("GET / with x-goog-project-id lists the buckets; without it GET / is still the probe")
    func listBuckets() throws {
        let server = try TestServer()
        let client = server.client()
        for name in ["alpha-bucket", "beta-bucket"] {
            #expect(try client.send(method: "PUT", target: "/\(name)").status == 200)
        }
        let listing = try client.get("/", headers: ["x-goog-project-id": "demo"])
        #expect(listing.status == 200 && listing.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        #expect(listing.text.contains("<ListAllMyBucketsResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01\">"))
        let buckets = XMLText.elements("Bucket", in: listing.text[...])
        #expect(buckets.compactMap { XMLText.value("Name", in: $0) } == ["alpha-bucket", "beta-bucket"])
        #expect(buckets.allSatisfy { XMLText.value("CreationDate", in: $0).flatMap { Timestamp(rfc3339: $0) } != nil })
        let probe = try client.get("/")
        #expect(probe.status == 200)
        #expect(try probe.string("emulator") == "storage")
    }

    @Test("on a secured server the bucket listing is the admin's; the probe stays open")
    func listBucketsSecured() throws {
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = false
        let key = "xml-service-admin-key-0123456789ab"
        var auth = TokenVerifier.Configuration()
        auth.adminKeys = try AdminKeys(keys: [key])
        let server = try TestServer(configuration: configuration, credentials: TokenVerifier(auth))
        let client = server.client()
        let refused = try client.get("/", headers: ["x-goog-project-id": "demo"])
        #expect(refused.status == 401 && XMLText.value("Code", in: refused.text[...]) == "AuthenticationRequired")
        let admin = try client.get("/", headers: ["x-goog-project-id": "demo", "Authorization": "Bearer \(key)"])
        #expect(admin.status == 200 && admin.text.contains("<ListAllMyBucketsResult"))
        #expect(try client.get("/").status == 200)
    }

    @Test("a method the resource does not take is 405 MethodNotAllowed with Allow")
    func methodNotAllowed() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.send(method: "PUT", target: "/\(bucket)").status == 200)
        #expect(try client.send(method: "PUT", target: "/\(bucket)/o", body: bytes("o")).status == 200)
        for target in ["/\(bucket)", "/\(bucket)/o"] {
            let answer = try client.send(method: "PATCH", target: target, body: bytes("{}"))
            #expect(answer.status == 405, "\(target)")
            #expect(XMLText.value("Code", in: answer.text[...]) == "MethodNotAllowed")
            #expect(answer.headers["Allow"] == "GET, HEAD, PUT, DELETE, POST")
        }
        #expect(try client.get("/\(bucket)/o").body == bytes("o"))
    }

    @Test("an unsatisfiable Range is 416 InvalidRange in XML, with Content-Range: bytes */size")
    func invalidRange() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.send(method: "PUT", target: "/\(bucket)").status == 200)
        #expect(try client.send(method: "PUT", target: "/\(bucket)/r", body: pattern(100)).status == 200)
        let answer = try client.get("/\(bucket)/r", headers: ["Range": "bytes=500-"])
        #expect(answer.status == 416)
        #expect(answer.headers["Content-Range"] == "bytes */100")
        #expect(answer.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        #expect(XMLText.value("Code", in: answer.text[...]) == "InvalidRange")
        #expect(XMLText.value("Message", in: answer.text[...])?.contains("bytes=500-") == true)
        let head = try client.send(method: "HEAD", target: "/\(bucket)/r", headers: ["Range": "bytes=500-"])
        #expect(head.status == 416 && head.body.isEmpty)
    }
}
