import SiloHTTP

extension OpenAPIDocument {
    private static let headers: HTTPHeaders = {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        ContentIsolation.add(to: &headers)
        return headers.preformatted()
    }()

    /// The answer to `GET /openapi.json`.
    static func response() -> HTTPResponse {
        HTTPResponse(status: 200, headers: headers, body: .bytes(bytes))
    }
}
