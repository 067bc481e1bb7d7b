import Foundation
import SiloCore
import SiloHTTP
import SiloHashing
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The XML API's resumable uploads on a live socket: the start's 201 and session URI, chunks with 308 and `Range`,
/// status queries, the final answer, cancel — on the JSON API's engine, each session only on its own API's URLs.
@Suite struct XMLResumableTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
        try XMLMultipartTests.createBucket(client)
    }

    func start(_ name: String, query: String = "", headers: HTTPHeaders = [:]) throws -> String {
        var headers = headers
        headers.add("x-goog-resumable", "start")
        let started = try client.send(
            method: "POST", target: XMLMultipartTests.path(name) + (query.isEmpty ? "" : "?" + query), headers: headers)
        #expect(started.status == 201, "\(started.text)")
        let location = try #require(started.headers["Location"])
        return String(location[location.range(of: "/\(bucket)/")!.lowerBound...])
    }

    @Test func chunksStatusAndFinish() throws {
        let name = "res/um é.bin"
        let body = pattern(600_000, seed: 5)
        let session = try start(
            name, query: "keep=abc&x=1",
            headers: ["Content-Type": "text/plain", "x-goog-meta-color": "blue"])
        #expect(session.hasPrefix(XMLMultipartTests.path(name) + "?keep=abc&x=1&upload_id="))

        let empty = try client.send(method: "PUT", target: session, headers: ["Content-Range": "bytes */*"])
        #expect(empty.status == 308 && empty.headers["Range"] == nil)
        let first = try client.send(
            method: "PUT", target: session, headers: ["Content-Range": "bytes 0-262143/*"],
            body: Array(body[0..<262_144]))
        #expect(first.status == 308 && first.headers["Range"] == "bytes=0-262143")
        let status = try client.send(method: "PUT", target: session, headers: ["Content-Range": "bytes */*"])
        #expect(status.status == 308 && status.headers["Range"] == "bytes=0-262143")
        // A chunk again from 0 (its answer lost) is not appended twice: the client is told where the session is.
        let stale = try client.send(
            method: "PUT", target: session, headers: ["Content-Range": "bytes 0-9/*"], body: Array(body[0..<10]))
        #expect(stale.status == 308 && stale.headers["Range"] == "bytes=0-262143")
        let last = try client.send(
            method: "PUT", target: session, headers: ["Content-Range": "bytes 262144-599999/600000"],
            body: Array(body[262_144...]))
        #expect(last.status == 200, "\(last.text)")
        #expect(last.headers["ETag"] == "\"\(hex(MD5Hasher.digest(body)))\"")
        #expect(
            last.headers["x-goog-hash"]?.contains("crc32c=\(Checksums.crc32cBase64(CRC32C.checksum(body)))") == true)
        let generation = try #require(last.headers["x-goog-generation"])

        let object = try client.get(XMLMultipartTests.gcs(name)).json()
        #expect(object["generation"]?.stringValue == generation)
        #expect(object["contentType"]?.stringValue == "text/plain")
        #expect(object["metadata"]?.objectValue?["color"]?.stringValue == "blue")
        #expect(try client.get(XMLMultipartTests.gcs(name) + "?alt=media").body == body)
        let repeated = try client.send(method: "PUT", target: session, headers: ["Content-Range": "bytes */600000"])
        #expect(repeated.status == 200 && repeated.headers["x-goog-generation"] == generation)
    }

    @Test func theWholeObjectInOnePutAndACancel() throws {
        let session = try start("whole")
        #expect(try client.get(session).status == 405, "a read of the session URI finishes nothing")
        #expect(try client.get(XMLMultipartTests.gcs("whole")).status == 404)
        let done = try client.send(method: "PUT", target: session, body: bytes("all at once"))
        #expect(done.status == 200)
        #expect(try client.get(XMLMultipartTests.gcs("whole") + "?alt=media").text == "all at once")

        let cancelled = try start("cancelled")
        #expect(try client.send(method: "DELETE", target: cancelled).status == 499)
        let after = try client.send(method: "PUT", target: cancelled, body: bytes("x"))
        #expect(after.status == 404)
        #expect(after.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        #expect(try client.get(XMLMultipartTests.gcs("cancelled")).status == 404)
    }

    @Test func aSessionAnswersOnlyOnItsOwnAPIsURLs() throws {
        let xml = try start("mine")
        let id = try #require(xml.split(separator: "upload_id=").last.map(String.init))
        let viaJSON = try client.send(
            method: "PUT", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&upload_id=\(id)",
            body: bytes("x"))
        #expect(viaJSON.status == 404)
        let otherName = try client.send(method: "PUT", target: XMLMultipartTests.path("theirs") + "?upload_id=\(id)")
        #expect(otherName.status == 404, "a session URI names its object")

        let json = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&name=j",
            headers: ["Content-Type": "application/json"], body: bytes("{}"))
        let location = try #require(json.headers["Location"])
        let jsonID = try #require(location.split(separator: "upload_id=").last.map(String.init))
        let viaXML = try client.send(method: "PUT", target: XMLMultipartTests.path("j") + "?upload_id=\(jsonID)")
        #expect(viaXML.status == 404)
    }

    @Test func startsAreCheckedWhereTheyEnter() throws {
        let bogus = try client.send(
            method: "POST", target: XMLMultipartTests.path("b"), headers: ["x-goog-resumable": "begin"])
        #expect(bogus.status == 400)
        let badTime = try client.send(
            method: "POST", target: XMLMultipartTests.path("b"),
            headers: ["x-goog-resumable": "start", "x-goog-custom-time": "yesterday"])
        #expect(badTime.status == 400)
        // Outside emulator mode (where uploads create their bucket).
        let secured = try XMLMultipartTests.securedServer()
        let noBucket = try secured.client().send(
            method: "POST", target: "/missing-bucket/b", headers: ["x-goog-resumable": "start"])
        #expect(noBucket.status == 404)
        let session = try start("exists-not", headers: ["x-goog-if-generation-match": "0"])
        try XMLMultipartTests.put(client, "exists-not", bytes("first"))
        let refused = try client.send(method: "PUT", target: session, body: bytes("second"))
        #expect(refused.status == 412)
        #expect(XMLMultipartTests.code(refused) == "PreconditionFailed")
        let again = try client.send(method: "PUT", target: session, headers: ["Content-Range": "bytes */6"])
        #expect(again.status == 412, "a refused finalize is refused again")
    }
}
