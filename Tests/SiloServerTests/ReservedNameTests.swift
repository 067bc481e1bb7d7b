import Foundation
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// GCS's naming requirements (cloud.google.com/storage/docs/objects): a name cannot be `.` or `..`, nor start with
/// `.well-known/acme-challenge/`. Such a name is refused with 400 wherever a name enters — v0, JSON and XML paths,
/// queries, upload metadata, copy and compose destinations, copy sources, form keys — and nothing is stored.
@Suite struct ReservedNameTests {
    static let names = [".", "..", ".well-known/acme-challenge/token"]
    let server: TestServer
    let client: HTTPTestClient
    let gcsBucket = "names"

    init() throws {
        server = try TestServer()
        client = server.client()
        #expect(
            try client.send(method: "POST", target: "/storage/v1/b", body: bytes(#"{"name":"names"}"#)).status == 200)
        #expect(try client.mediaUpload("source.txt", bytes("source")).status == 200)
        #expect(
            try client.send(
                method: "POST", target: "/upload/storage/v1/b/names/o?uploadType=media&name=source.txt",
                body: bytes("source")
            ).status == 200)
    }

    /// In a path segment: every `.` escaped, as a client that escapes it sends it (a bare `.` segment is
    /// normalised away by browsers and URL libraries before it is sent).
    static func segment(_ name: String) -> String {
        PercentCoding.encodeComponent(name).replacingOccurrences(of: ".", with: "%2E")
    }

    static func json(_ name: String) -> String { JSONValue.object(["name": .string(name)]).serializedString }

    static func multipart(_ metadata: String, boundary: String = "reserved-names") -> [UInt8] {
        bytes(
            "--\(boundary)\r\nContent-Type: application/json; charset=utf-8\r\n\r\n\(metadata)\r\n--\(boundary)\r\n"
                + "Content-Type: text/plain\r\n\r\nbody\r\n--\(boundary)--\r\n")
    }

    func expect400(
        _ what: String, _ method: String, _ target: String, _ body: [UInt8] = [], headers: HTTPHeaders = [:]
    ) throws {
        let response = try client.send(method: method, target: target, headers: headers, body: body)
        #expect(response.status == 400, "\(what): \(response.status) \(response.text)")
    }

    @Test("the Firebase v0 API refuses them in the path, the query and upload metadata", arguments: names)
    func firebase(name: String) throws {
        let query = PercentCoding.encodeComponent(name)
        let related: HTTPHeaders = [
            "X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=reserved-names",
        ]
        try expect400("v0 media upload", "POST", "/v0/b/\(bucket)/o?name=\(query)", bytes("x"))
        try expect400("v0 multipart", "POST", "/v0/b/\(bucket)/o", Self.multipart(Self.json(name)), headers: related)
        try expect400(
            "v0 resumable start", "POST", "/v0/b/\(bucket)/o?name=\(query)", bytes(Self.json(name)),
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"])
        for method in ["GET", "PATCH", "DELETE"] {
            try expect400("v0 \(method)", method, "/v0/b/\(bucket)/o/\(Self.segment(name))")
        }
        try expect400("v0 DELETE by query", "DELETE", "/v0/b/\(bucket)/o?name=\(query)")
        let listed = try client.get(bucketPath()).json()["items"]?.arrayValue ?? []
        #expect(listed.compactMap { $0.objectValue?["name"]?.stringValue } == ["source.txt"])
    }

    @Test("the GCS JSON API refuses them in paths, uploads and copy, rewrite and compose", arguments: names)
    func json(name: String) throws {
        let query = PercentCoding.encodeComponent(name)
        let objects = "/storage/v1/b/\(gcsBucket)/o"
        let uploads = "/upload/storage/v1/b/\(gcsBucket)/o"
        let type: HTTPHeaders = ["Content-Type": "application/json"]
        try expect400("JSON media upload", "POST", "\(uploads)?uploadType=media&name=\(query)", bytes("x"))
        try expect400(
            "JSON multipart", "POST", "\(uploads)?uploadType=multipart", Self.multipart(Self.json(name)),
            headers: ["Content-Type": "multipart/related; boundary=reserved-names"])
        try expect400(
            "JSON resumable start", "POST", "\(uploads)?uploadType=resumable", bytes(Self.json(name)), headers: type)
        for method in ["GET", "PATCH", "DELETE"] {
            try expect400("JSON \(method)", method, "\(objects)/\(Self.segment(name))", bytes("{}"), headers: type)
        }
        try expect400("JSON media download", "GET", "/download\(objects)/\(Self.segment(name))?alt=media")
        for verb in ["copyTo", "rewriteTo"] {
            try expect400(
                verb, "POST", "\(objects)/source.txt/\(verb)/b/\(gcsBucket)/o/\(Self.segment(name))", bytes("{}"),
                headers: type)
        }
        try expect400(
            "compose", "POST", "\(objects)/\(Self.segment(name))/compose",
            bytes(#"{"sourceObjects":[{"name":"source.txt"}]}"#), headers: type)
        let listed = try client.get(objects).json()["items"]?.arrayValue ?? []
        #expect(listed.compactMap { $0.objectValue?["name"]?.stringValue } == ["source.txt"])
    }

    @Test("the XML API refuses them in paths, copy sources and form keys", arguments: names)
    func xml(name: String) throws {
        try expect400("XML PUT", "PUT", "/\(gcsBucket)/\(Self.segment(name))", bytes("x"))
        try expect400("XML GET", "GET", "/\(gcsBucket)/\(Self.segment(name))")
        try expect400(
            "XML copy source", "PUT", "/\(gcsBucket)/copy.txt",
            headers: ["x-goog-copy-source": "/\(gcsBucket)/\(Self.segment(name))"])
        let boundary = "form-boundary"
        let form = bytes(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n\(name)\r\n--\(boundary)\r\n"
                + "Content-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\n"
                + "body\r\n--\(boundary)--\r\n")
        try expect400(
            "form upload", "POST", "/\(gcsBucket)", form,
            headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"])
        let listed = try client.get("/storage/v1/b/\(gcsBucket)/o").json()["items"]?.arrayValue ?? []
        #expect(listed.compactMap { $0.objectValue?["name"]?.stringValue } == ["source.txt"])
    }

    @Test("names that only contain or resemble them are ordinary")
    func neighbours() throws {
        for name in [
            "...", ".a", "a/..", ".well-known/acme-challenge", ".well-known/other/x", "x/.well-known/acme-challenge/y",
        ] {
            #expect(try client.mediaUpload(name, bytes(name)).status == 200, "\(name)")
            #expect(try client.get(objectPath(name) + "?alt=media").text == name, "\(name)")
        }
    }
}
