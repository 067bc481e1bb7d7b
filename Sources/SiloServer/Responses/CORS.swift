import SiloHTTP

/// CORS as the Firebase emulator does it: reflect the origin and the requested headers, expose
/// the X-Goog-Upload headers the JS SDK reads.
enum CORS {
    static let exposed = [
        "Content-Type", "Content-Length", "Content-Range", "Content-Disposition", "Content-Encoding", "ETag",
        "X-Firebase-Storage-Version", "X-Goog-Upload-Size-Received", "X-Goog-Upload-URL", "X-Goog-Upload-Command",
        "X-GUploader-UploadID", "X-Goog-Upload-Header-Content-Length", "X-Goog-Upload-Header-Content-Type",
        "X-Goog-Upload-Protocol", "X-Goog-Upload-Status", "X-Goog-Upload-Chunk-Granularity",
        "X-Goog-Upload-Control-URL", "X-Goog-Hash", "X-Goog-Generation", "X-Goog-Metageneration", "Location", "Range",
    ].joined(separator: ", ")

    static let methods = "GET, HEAD, PUT, PATCH, POST, DELETE, OPTIONS"

    /// Adds the CORS headers to a response for a request that carried `Origin`.
    static func decorate(_ response: inout HTTPResponse, request: HTTPRequestHead) {
        guard let origin = request.headers["Origin"] else { return }
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Allow-Credentials", "true")
        response.headers.set("Access-Control-Expose-Headers", exposed)
        response.headers.add("Vary", "Origin")
    }

    /// The answer to a preflight `OPTIONS`.
    static func preflight(_ request: HTTPRequestHead) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("Access-Control-Allow-Methods", methods)
        if let requested = request.headers["Access-Control-Request-Headers"] {
            headers.set("Access-Control-Allow-Headers", requested)
        }
        if request.headers["Access-Control-Request-Private-Network"] != nil {
            headers.set("Access-Control-Allow-Private-Network", "true")
        }
        headers.set("Access-Control-Max-Age", "3600")
        var response = HTTPResponse(status: 204, headers: headers)
        decorate(&response, request: request)
        return response
    }
}
