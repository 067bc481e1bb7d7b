import SiloCore
import SiloHTTP
import SiloWire

/// One file of the web console, as embedded by scripts/embed-console.sh.
struct ConsoleAsset: Sendable {
    var contentType: String
    /// A strong validator of the file's bytes (a hash prefix), computed when the file was embedded.
    var etag: String
    var text: String
}

/// `/console/…`: the web console's static files (docs/console.md) and its small admin API under `/console/api/`.
/// Everything else the console does goes through the public v0 and GCS JSON APIs, as any client's calls do.
struct ConsoleRoutes: Sendable {
    let service: ObjectService

    func handle(_ context: RequestContext, _ path: [String]) -> RequestDisposition {
        if path.first == "api" { return ConsoleAPI(service: service).handle(context, Array(path.dropFirst())) }
        guard context.method == "GET" || context.method == "HEAD" else {
            return .respond(
                Reply.gcsError(StorageError(.methodNotAllowed, "\(context.method) is not supported on the console")))
        }
        // `/console` itself: the files' relative links need the trailing slash.
        if path.isEmpty {
            var headers = Self.securityHeaders
            headers.set("Location", "/console/")
            return .respond(Reply.empty(301, headers: headers))
        }
        let name = path.count == 1 && !path[0].isEmpty ? path[0] : (path == [""] ? "index.html" : "")
        guard let asset = ConsoleAssets.files[name] else {
            return .respond(
                Reply.gcsError(
                    StorageError(.notFound, "No console file /console/\(path.joined(separator: "/").prefix(100))")))
        }
        return .respond(Self.response(asset, ifNoneMatch: context.headers["If-None-Match"]))
    }

    /// The asset, or 304 when the browser holds this version. `no-cache`: the file names carry no version, so a
    /// browser must revalidate (one 304) rather than keep an old console after the binary changes.
    static func response(_ asset: ConsoleAsset, ifNoneMatch: String?) -> HTTPResponse {
        var headers = securityHeaders
        headers.set("ETag", asset.etag)
        headers.set("Cache-Control", "no-cache")
        if let ifNoneMatch, DownloadResponder.matches(ifNoneMatch, etag: asset.etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.set("Content-Type", asset.contentType)
        return HTTPResponse(status: 200, headers: headers, body: .bytes(Array(asset.text.utf8)))
    }

    /// What every console answer carries. The policy allows only the console's own files and the same origin's
    /// APIs: no inline script or style (object names and metadata are untrusted text shown by the console), no
    /// plugins, no framing by other sites; `blob:` for previews of objects fetched with the caller's credential.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; media-src 'self' blob:; "
        + "frame-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let securityHeaders: HTTPHeaders = [
        "Content-Security-Policy": contentSecurityPolicy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cross-Origin-Opener-Policy": "same-origin",
    ]
}
