import SiloHTTP

extension OpenAPIDocument {
    /// The document's bytes, converted once.
    static let bytes = Array(json.utf8)

    private static let headers: HTTPHeaders = {
        let headers: HTTPHeaders = ["Content-Type": "application/json"]
        return headers.preformatted()
    }()

    /// The answer to `GET /openapi.json`.
    static func response() -> HTTPResponse {
        HTTPResponse(status: 200, headers: headers, body: .bytes(bytes))
    }
}
