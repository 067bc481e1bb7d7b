import SiloCore
import SiloHTTP

/// The API a request is for, which decides the shape of the errors the pipeline answers before a handler runs: v0
/// JSON, GCS JSON (with `errors[].reason`) or XML.
package enum APIShape {
    case firebase, gcs, xml

    /// `route` is nil when the path itself was refused.
    static func of(_ route: Route?, rawPath: String) -> APIShape {
        if rawPath.hasPrefix("/v0/") { return .firebase }
        if route?.isXML == true { return .xml }
        // A path that names nothing outside the JSON API's roots gets the v0 shape, as the emulator answers it.
        if route == .unknown && !jsonRoots.contains(where: { rawPath.hasPrefix($0) }) { return .firebase }
        return .gcs
    }

    /// Where the GCS JSON API's paths start.
    static let jsonRoots = ["/storage/", "/upload/", "/download/"]

    func error(_ error: any Error, headers: HTTPHeaders = [:]) -> HTTPResponse {
        switch self {
        case .firebase: Reply.firebaseError(error, headers: headers)
        case .gcs: Reply.gcsError(error, headers: headers)
        case .xml: Reply.xmlError(error, headers: headers)
        }
    }

    /// The answer for an error of `route`'s handler: a JSON API media read answers its 404s in plain text, as GCS
    /// does.
    func error(_ error: any Error, for route: Route, _ context: RequestContext) -> HTTPResponse {
        if self == .gcs, case .gcsObject = route, APIShape.isMediaRead(context),
            let storage = error as? StorageError, storage.code == .notFound
        {
            return Reply.text(404, storage.message)
        }
        return self.error(error)
    }

    /// The answer for a bucket this server does not serve: the XML API names it `NoSuchBucket`.
    func notServed(_ error: StorageError, _ route: Route, _ context: RequestContext) -> HTTPResponse {
        self == .xml ? Reply.xmlError(error, code: XMLErrorCode.noSuchBucket) : self.error(error, for: route, context)
    }

    /// A read of the object's bytes rather than its metadata.
    package static func isMediaRead(_ context: RequestContext) -> Bool {
        (context.method == "GET" || context.method == "HEAD")
            && (context.query["alt"] == "media" || context.head.rawPath.hasPrefix("/download/"))
    }
}
