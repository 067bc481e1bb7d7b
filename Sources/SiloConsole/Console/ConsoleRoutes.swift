import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// One file of the web console (``ConsoleAssets``).
struct ConsoleAsset: Sendable {
    var contentType: String
    /// A strong validator of the file's bytes (a hash prefix, ``ConsoleAssets/etag(_:)``).
    var etag: String
    var text: String
}

/// `/console/…`: the web console's static files (docs/console.md) and its small admin API under `/console/api/`.
/// Everything else the console does goes through the public v0 and GCS JSON APIs, as any client's calls do.
///
/// The console shares its origin with the APIs, and so with every byte users upload: those answers are sandboxed
/// (``ContentIsolation``), and the console's page trusts no script or style sheet of that origin but its own, by a
/// nonce made for each answer (``page(_:)``), so that even markup slipped into the page could not load an uploaded
/// script as `'self'`. Its API answers the console's page only (``ConsoleAPI``).
struct ConsoleRoutes: Sendable {
    let service: ObjectService

    package func handle(_ context: RequestContext, _ path: [String]) -> RequestDisposition {
        if path.first == "api" {
            switch ConsoleAPI(service: service).handle(context, Array(path.dropFirst())) {
            case .respond(let response): return .respond(Self.isolated(response))
            case .readBody(let sink):
                return .readBody(DecoratingSink(sink) { ContentIsolation.ensure(&$0.headers) })
            }
        }
        guard context.method == "GET" || context.method == "HEAD" else {
            return .respond(
                Self.isolated(
                    Reply.gcsError(
                        StorageError(.methodNotAllowed, "\(context.method) is not supported on the console"))))
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
                Self.isolated(
                    Reply.gcsError(
                        StorageError(
                            .notFound, "No console file /console/\(path.joined(separator: "/").prefix(100))"))))
        }
        if name == Self.pageName { return .respond(Self.page(asset)) }
        return .respond(Self.response(asset, ifNoneMatch: context.headers["If-None-Match"]))
    }

    /// The file whose answer is a page, with a nonce of its own each time.
    static let pageName = "index.html"

    /// What stands in index.html for the nonce of its `<script>` and `<link rel=stylesheet>` elements. Not a valid
    /// nonce (CSP Level 3 §2.3.1 allows no braces), so a page served without it replaced loads nothing.
    static let noncePlaceholder = "{{NONCE}}"

    /// The page, its placeholder replaced by a fresh nonce that its policy names. Never stored or revalidated: each
    /// answer's nonce is its own.
    static func page(_ asset: ConsoleAsset, nonce: String = RandomID.sessionID()) -> HTTPResponse {
        var headers = securityHeaders
        headers.set("Content-Security-Policy", pagePolicy(nonce: nonce))
        headers.set("Cache-Control", "no-store")
        headers.set("Content-Type", asset.contentType)
        let text = asset.text.split(separator: noncePlaceholder, omittingEmptySubsequences: false)
            .joined(separator: nonce)
        return HTTPResponse(status: 200, headers: headers, body: .bytes(Array(text.utf8)))
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

    /// The page's policy: scripts and style sheets only by this answer's nonce (module imports inherit it, HTML's
    /// "descendant script fetch options"), never by origin, since uploaded bytes share it; no inline script or
    /// style (object names and metadata are untrusted text shown by the console); images, media and frames of the
    /// same origin (previews of objects, sandboxed themselves) or `blob:` (previews fetched with the caller's
    /// credential); no plugins, no framing by other sites.
    static func pagePolicy(nonce: String) -> String {
        "default-src 'none'; script-src 'nonce-\(nonce)'; style-src 'nonce-\(nonce)'; img-src 'self' blob: data:; "
            + "media-src 'self' blob:; frame-src 'self' blob:; connect-src 'self'; base-uri 'none'; "
            + "form-action 'none'; frame-ancestors 'none'"
    }

    /// The policy of every other console answer (scripts, the style sheet, the icon, redirects): none of them is
    /// a page, so one opened as a document may load and frame nothing.
    static let contentSecurityPolicy =
        "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let securityHeaders: HTTPHeaders = [
        "Content-Security-Policy": contentSecurityPolicy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cross-Origin-Opener-Policy": "same-origin",
    ]

    /// An answer of the console's paths that is no file of the console (errors, the API's JSON): sandboxed like
    /// every answer of the APIs.
    package static func isolated(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        ContentIsolation.ensure(&response.headers)
        return response
    }
}
