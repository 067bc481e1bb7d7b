package import SiloCore
package import SiloHTTP

/// One API's part of the server: the routes it answers. The kit knows no API; the server's composition hands
/// ``SiloServerApp`` its groups, and the pipeline asks them in order, after authentication and the served-bucket
/// check. A route no group answers is the kit's own (the probe, `/openapi.json`, `/metrics`) or a 404.
package protocol RouteGroup: Sendable {
    /// Builds the group over `parts`: once for the worker pipeline and once for the inline one, whose service
    /// refuses every call that would block (``ObjectService/inlineView(_:)``).
    init(_ parts: RouteGroupParts)

    /// The answer for `route`, or nil when `route` is not this group's. A thrown error is answered in the shape of
    /// the route's API (``errorShape(for:rawPath:)``). `pipeline` runs requests of their own (a batch's calls).
    func handle(_ route: Route, _ context: RequestContext, _ pipeline: RequestPipeline) throws -> RequestDisposition?

    /// The access decision a session of `api` makes again when it commits, nil when `api` is not this group's.
    static func commitAccess(_ api: UploadSession.API) -> WriteAccess?

    /// The shape of errors for a request of `route` (nil when its path was refused), nil when the request is not
    /// this group's (``RequestPipeline/errorShape(_:rawPath:)`` says what the kit answers then).
    func errorShape(for route: Route?, rawPath: String) -> (any ErrorShape)?
}

extension RouteGroup {
    package static func commitAccess(_ api: UploadSession.API) -> WriteAccess? { nil }
    package func errorShape(for route: Route?, rawPath: String) -> (any ErrorShape)? { nil }
}

/// What a route group is built from: the services every API shares.
package struct RouteGroupParts: Sendable {
    package let service: ObjectService
    /// Upload sessions, shared by every API's resumable and multipart uploads.
    package let registry: SessionRegistry
    /// How a session commits (``SiloServerApp``'s rule: as its starter, decided again at commit).
    package let sessionCommit: SessionCommit
}
