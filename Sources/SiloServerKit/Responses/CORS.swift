import SiloHTTP

/// CORS for the storage APIs as the Firebase emulator answers it: any origin, reflected, with the requested headers
/// allowed and the X-Goog-Upload headers the JS SDK reads exposed. Without credentials: a browser sends Silo no
/// credential by itself (no cookie, HTTP authentication or client certificate is ever asked for or read; every
/// caller names its credential in `Authorization` or in a signed URL), so `Access-Control-Allow-Credentials` would
/// only ever let another site read what an ambient credential of someone else's — a cookie of a proxy in front of
/// Silo — authorized. GCS answers the same way where it has one: its cookie-authenticated endpoint
/// (storage.cloud.google.com) allows no CORS at all. The one place such a credential exists by design is a Cloud
/// Workstations (Firebase Studio) preview: the workstation's proxy admits requests by its own cookie, and the
/// Firebase JS SDK sends credentials to an emulator there (and only there); an origin on
/// `cloudworkstations.dev` is answered with credentials, as the Firebase emulator answers it. The console's paths
/// get no CORS answer ever: its API is for the console's own page, never for another origin (SiloConsole's `ConsoleRoutes`).
package enum CORS {
    static let exposed = [
        "Content-Type", "Content-Length", "Content-Range", "Content-Disposition", "Content-Encoding", "ETag",
        "X-Firebase-Storage-Version", "X-Goog-Upload-Size-Received", "X-Goog-Upload-URL", "X-Goog-Upload-Command",
        "X-GUploader-UploadID", "X-Goog-Upload-Header-Content-Length", "X-Goog-Upload-Header-Content-Type",
        "X-Goog-Upload-Protocol", "X-Goog-Upload-Status", "X-Goog-Upload-Chunk-Granularity",
        "X-Goog-Upload-Control-URL", "X-Goog-Hash", "X-Goog-Generation", "X-Goog-Metageneration", "Location", "Range",
    ].joined(separator: ", ")

    static let methods = "GET, HEAD, PUT, PATCH, POST, DELETE, OPTIONS"

    /// Adds the CORS headers to a storage API's response for a request that carried `Origin`.
    static func decorate(_ response: inout HTTPResponse, request: HTTPRequestHead) {
        guard let origin = request.headers["Origin"] else { return }
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Expose-Headers", exposed)
        if isCloudWorkstation(origin) { response.headers.set("Access-Control-Allow-Credentials", "true") }
        response.headers.add("Vary", "Origin")
    }

    /// Whether `origin` is a Cloud Workstations preview (`https://<port>-<workstation>.cloudworkstations.dev`), the
    /// host suffix the Firebase JS SDK sends credentials to an emulator for.
    static func isCloudWorkstation(_ origin: String) -> Bool {
        guard origin.hasPrefix("https://") else { return false }
        var host = origin.dropFirst("https://".count)
        if let colon = host.lastIndex(of: ":") { host = host[..<colon] }
        return host.hasSuffix(".cloudworkstations.dev") && !host.contains("/")
    }

    /// The answer to a preflight `OPTIONS` of a storage API's path.
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

    /// The answer to a preflight of one of the console's paths: only the console's own page calls them, and a
    /// same-origin call is never preflighted, so this is another origin asking, and it is told nothing.
    static func refusedPreflight() -> HTTPResponse { HTTPResponse(status: 403) }
}
