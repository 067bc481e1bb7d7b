package import SiloCore
package import SiloHTTP

/// How an API answers an error: v0 JSON, GCS JSON with `errors[].reason`, or XML. Each API's route group brings
/// its own (``RouteGroup/errorShape(for:rawPath:)``), and the pipeline answers what fails before a handler — a
/// refused credential, a bucket not served, a handler's thrown error — in the shape of the request's API.
package protocol ErrorShape: Sendable {
    /// Any error, in this shape.
    func answer(_ error: any Error) -> HTTPResponse
    /// An error `route`'s handler threw.
    func answer(_ error: any Error, for route: any RouteTarget, _ context: RequestContext) -> HTTPResponse
    /// A bucket this server does not serve.
    func notServed(_ error: StorageError, _ route: any RouteTarget, _ context: RequestContext) -> HTTPResponse
}

extension ErrorShape {
    package func answer(_ error: any Error, for route: any RouteTarget, _ context: RequestContext) -> HTTPResponse {
        answer(error)
    }

    package func notServed(_ error: StorageError, _ route: any RouteTarget, _ context: RequestContext)
        -> HTTPResponse
    {
        answer(error, for: route, context)
    }
}

/// The v0 API's shape, `{"error":{"code":N,"message":"…"}}`: also what a path that names nothing outside GCS's
/// JSON API paths gets, as the Firebase emulator answers it.
package struct FirebaseErrorShape: ErrorShape {
    package init() {}
    package func answer(_ error: any Error) -> HTTPResponse { Reply.firebaseError(error) }
}

/// The GCS JSON API's shape: what the kit's own routes (the probe, `/openapi.json`, the operations endpoints) and
/// paths that do not parse answer, unless an API claims them.
struct GCSJSONErrorShape: ErrorShape {
    package init() {}
    package func answer(_ error: any Error) -> HTTPResponse { Reply.gcsError(error) }
}

extension RequestPipeline {
    /// The shape of errors for a request of `route`, or of a request whose target was refused (`route` nil) by the
    /// group `refusedBy`: that group's, else v0's for a path that names nothing, else GCS JSON's.
    func errorShape(_ route: Route?, refusedBy: Int? = nil, rawPath: String) -> any ErrorShape {
        if let group = route.map({ $0.group }) ?? refusedBy,
            let shape = groups[group].errorShape(for: route?.target, rawPath: rawPath)
        {
            return shape
        }
        if (route?.target as? KitTarget)?.route == .unknown { return FirebaseErrorShape() }
        return GCSJSONErrorShape()
    }
}
