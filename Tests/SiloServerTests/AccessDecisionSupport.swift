import SiloCore
import SiloHTTP
import SiloTesting
import SiloWire
import Testing

/// What the generation and commit access suites do on a ``SecuredServer``: versions of one object written by
/// different callers, and requests that something happens in the middle of.
extension SecuredServer {
    /// Turns object versioning on (admin).
    func versioned() throws {
        let response = try send(
            "PATCH", "/storage/v1/b/\(bucketName)", #"{"versioning":{"enabled":true}}"#, headers: admin)
        #expect(response.status == 200, "\(response.text)")
    }

    /// A media upload of `name` through the JSON API with `headers` as the caller; the answer.
    func upload(_ name: String, _ body: String, query: String = "", headers: HTTPHeaders) throws -> TestResponse {
        try send(
            "POST",
            "/upload/storage/v1/b/\(bucketName)/o?uploadType=media&name=\(PercentCoding.encodeComponent(name))"
                + (query.isEmpty ? "" : "&" + query), body, headers: headers)
    }

    /// The generation of an upload's answer.
    func generation(_ response: TestResponse) throws -> String {
        try #require(try response.string("generation"), "\(response.status) \(response.text)")
    }

    /// The bytes of `name` (live) as the admin reads them.
    func bytes(_ name: String) throws -> String {
        try send("GET", "\(objects)/\(PercentCoding.encodeComponent(name))?alt=media", headers: admin).text
    }

    /// Sends `method target` with `Expect: 100-continue`; once the server has routed the request and decided its
    /// access (its `100 Continue`), runs `meanwhile`, then sends `body` and returns the final answer. A final answer
    /// instead of the `100` is returned (its head only), and `meanwhile` does not run.
    func raced(
        _ method: String, _ target: String, _ body: [UInt8], headers: HTTPHeaders = [:],
        meanwhile: () throws -> Void
    ) throws -> TestResponse {
        let connection = server.client()
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        head += "Content-Length: \(body.count)\r\nExpect: 100-continue\r\n\r\n"
        try connection.sendRaw(Array(head.utf8))
        let first = try connection.readHead()
        guard first.status == 100 else { return first }
        try meanwhile()
        try connection.sendRaw(body)
        return try connection.readResponse(method: method)
    }
}
