package import SiloHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What makes every answer but the console's own files inert in a browser. The console runs on the same origin as
/// the APIs (docs/console.md), and keeps its admin key in that origin's `sessionStorage`; GCS and Firebase keep user
/// bytes away from their consoles by serving them from other hosts, and Silo, on one port, keeps them away by making
/// every document built from one of its answers a sandboxed one (docs/threat-model.md, "User content and the
/// console's origin"):
/// - `Content-Security-Policy: sandbox` (CSP Level 3 §6.3.2, the iframe `sandbox` flags of the HTML standard)
///   without `allow-scripts` or `allow-same-origin`: an uploaded HTML page or SVG, an object served as
///   `response-content-type=text/html`, an XML listing or error opened in a tab, gets an opaque origin and runs no
///   script, submits no form and opens no window. It can read nothing the origin keeps and send nothing as it.
///   `allow-downloads` and `allow-modals` give neither script nor origin; they keep the browser's PDF viewer whole
///   (its download and print buttons), so a PDF's download URL still opens as a PDF.
/// - `X-Content-Type-Options: nosniff`: the browser takes the stored type as it is and never guesses a script,
///   a style sheet or a page from bytes stored under another type (the Fetch standard's "should response to
///   request be blocked due to nosniff?").
///
/// Builders of answers sent many times unchanged add both when they make their headers (``add(to:)``), so the
/// preformatted bytes hold them; the pipeline makes sure of both on every answer (``ensure(_:)``).
package enum ContentIsolation {
    static let policy = "sandbox allow-downloads allow-modals"
    static let noSniff = "nosniff"

    /// Adds both fields to headers that hold neither (header lists built once per version, per thumbnail).
    package static func add(to headers: inout HTTPHeaders) {
        headers.add("Content-Security-Policy", policy)
        headers.add("X-Content-Type-Options", noSniff)
    }

    /// Both fields with these values, whatever the answer had; headers that hold them already are left as they
    /// are (and keep their preformatted bytes). No request can name a field of its answer (the XML API's
    /// `response-*` overrides name six fixed ones), so only a route of Silo's own could set another policy.
    package static func ensure(_ headers: inout HTTPHeaders) {
        // Headers made with ``add(to:)`` first and then preformatted (a version's download headers) hold both as
        // their first lines, and lose those bytes with any change: one comparison of bytes instead of two lookups
        // (720 instructions per cached download, `bench/instructions.sh unique`).
        if let wire = headers.wireFormat, startsWithBothFields(wire) { return }
        if headers["Content-Security-Policy"] != policy { headers.set("Content-Security-Policy", policy) }
        if headers["X-Content-Type-Options"] != noSniff { headers.set("X-Content-Type-Options", noSniff) }
    }

    /// Both fields as ``add(to:)`` puts them at the start of an empty list, on the wire.
    private static let firstLines = Array(
        "Content-Security-Policy: \(policy)\r\nX-Content-Type-Options: \(noSniff)\r\n".utf8)

    private static func startsWithBothFields(_ wire: [UInt8]) -> Bool {
        let expected = firstLines
        guard wire.count >= expected.count else { return false }
        return wire.withUnsafeBytes { have in
            expected.withUnsafeBytes { want in memcmp(have.baseAddress!, want.baseAddress!, want.count) == 0 }
        }
    }
}
