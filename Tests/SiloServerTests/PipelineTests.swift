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

    /// The shape of an error follows the API the path belongs to, whichever route group (or none) claims it.
    @Test func aPathNoAPIClaimsIsAnsweredInTheShapeOfItsPlace() throws {
        // A path that names nothing outside the JSON API's paths (most paths are the XML API's, path style; this one
        // is not, being under the batch endpoint's): v0's shape, as the Firebase emulator answers.
        let (nowhere, _) = try send("GET", "/batch/nothing")
        #expect(nowhere.status == 404)
        #expect(try nowhere.json()["error"]?.objectValue?["code"]?.int64Value == 404)
        #expect(try nowhere.json()["error"]?.objectValue?["errors"] == nil)

        // Under the JSON API's paths but naming nothing: GCS JSON's, with `errors[]`.
        let (json, _) = try send("GET", "/storage/v1/nothing/here")
        #expect(json.status == 404)
        #expect(try json.json()["error"]?.objectValue?["errors"]?.arrayValue?.isEmpty == false)

        // A v0 path that does not decode: v0's shape, whatever it would have routed to.
        let (v0, _) = try send("GET", "/v0/b/\(bucket)/o/%FF")
        #expect(v0.status == 400)
        #expect(try v0.json()["error"]?.objectValue?["code"]?.int64Value == 400)
        #expect(try v0.json()["error"]?.objectValue?["errors"] == nil)
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
