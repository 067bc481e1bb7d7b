import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The request pipeline's own steps, over a real socket: a bucket the server does not serve is refused once, before
/// any handler or store sees the request, in the shape of the API the route names.
@Suite struct PipelineTests {
    let hooks = StoreCallHooks()
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        var configuration = ServerConfiguration()
        configuration.buckets = [try BucketName(bucket)]
        server = try TestServer(configuration: configuration, hooks: hooks)
        client = server.client()
    }

    /// Sends a request and returns its answer with the store calls it caused.
    func send(_ method: String, _ target: String, headers: HTTPHeaders = [:], body: [UInt8] = []) throws
        -> (TestResponse, [StoreCall])
    {
        hooks.record()
        let response = try client.send(method: method, target: target, headers: headers, body: body)
        return (response, hooks.recorded())
    }

    @Test func anUnservedBucketIsRefusedInEachAPIsShapeWithoutAStoreCall() throws {
        let message = "Not Found. Bucket elsewhere is not served here."

        let (v0, v0Calls) = try send("GET", "/v0/b/elsewhere/o/a.txt")
        #expect(v0.status == 404)
        #expect(try v0.json()["error"]?.objectValue?["message"]?.stringValue == message)
        #expect(v0Calls.isEmpty)

        let (gcs, gcsCalls) = try send("GET", "/storage/v1/b/elsewhere/o/a.txt")
        #expect(gcs.status == 404)
        let error = try #require(try gcs.json()["error"]?.objectValue)
        #expect(error["message"]?.stringValue == message)
        #expect(error["errors"]?.arrayValue?.isEmpty == false)
        #expect(gcsCalls.isEmpty)

        // A JSON API media download answers its 404 in plain text, as GCS does.
        let (media, mediaCalls) = try send("GET", "/download/storage/v1/b/elsewhere/o/a.txt?alt=media")
        #expect(media.status == 404)
        #expect(media.headers["Content-Type"]?.hasPrefix("text/plain") == true)
        #expect(media.text == message)
        #expect(mediaCalls.isEmpty)

        let (xml, xmlCalls) = try send("GET", "/elsewhere/a.txt")
        #expect(xml.status == 404)
        #expect(XMLText.value("Code", in: xml.text[...]) == "NoSuchBucket")
        #expect(xmlCalls.isEmpty)
    }

    @Test func anUploadToAnUnservedBucketStoresNothing() throws {
        let (media, mediaCalls) = try send("POST", "/v0/b/elsewhere/o?name=a.txt", body: bytes("hello"))
        #expect(media.status == 404)
        #expect(mediaCalls.isEmpty)
        let (gcs, gcsCalls) = try send(
            "POST", "/upload/storage/v1/b/elsewhere/o?uploadType=media&name=a.txt", body: bytes("hello"))
        #expect(gcs.status == 404)
        #expect(gcsCalls.isEmpty)
        let (xml, xmlCalls) = try send("PUT", "/elsewhere/a.txt", body: bytes("hello"))
        #expect(xml.status == 404)
        #expect(XMLText.value("Code", in: xml.text[...]) == "NoSuchBucket")
        #expect(xmlCalls.isEmpty)
    }

    @Test func aCopyIsRefusedWhenEitherBucketIsNotServed() throws {
        #expect(try client.mediaUpload("source.txt", bytes("copy me")).status == 200)
        let target = "/storage/v1/b/\(bucket)/o/source.txt/copyTo/b/elsewhere/o/copy.txt"
        let (copy, calls) = try send("POST", target)
        #expect(copy.status == 404)
        #expect(try copy.json()["error"]?.objectValue?["message"]?.stringValue?.contains("elsewhere") == true)
        #expect(calls.isEmpty)
    }

    /// What Silo does not implement is 501 whatever the bucket (docs/openapi.json), served or not, and touches no store.
    @Test func anUnimplementedFeatureIs501EvenOnAnUnservedBucket() throws {
        for bucketName in [bucket, "elsewhere"] {
            for (method, path) in [
                ("GET", "folders"), ("POST", "anywhereCaches"), ("GET", "managedFolders/m/iam"),
                ("GET", "o/a.txt/iam"), ("POST", "o/watch"), ("POST", "o/bulkRestore"),
            ] {
                let (answer, calls) = try send(method, "/storage/v1/b/\(bucketName)/\(path)", body: bytes("{}"))
                #expect(answer.status == 501, "\(method) \(bucketName)/\(path)")
                #expect(try answer.json()["error"]?.objectValue?["code"]?.int64Value == 501)
                #expect(calls.isEmpty, "\(method) \(bucketName)/\(path)")
            }
        }
    }

    @Test func aServedBucketStillAnswers() throws {
        #expect(try client.mediaUpload("here.txt", bytes("here")).status == 200)
        #expect(try client.get(objectPath("here.txt") + "?alt=media").text == "here")
        #expect(try client.get("/\(bucket)/here.txt").text == "here")
        #expect(try client.get("/download/storage/v1/b/\(bucket)/o/here.txt?alt=media").text == "here")
    }
}
