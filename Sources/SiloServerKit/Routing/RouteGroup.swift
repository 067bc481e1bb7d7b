package import SiloCore
package import SiloHTTP

/// One API's part of the server: the routes it parses, answers and names errors for. The kit knows no API; the
/// server's composition hands ``SiloServerApp`` its groups, and the pipeline asks them (``Router``), so adding a
/// route touches only its own API's files.
///
/// Routing asks every group in order at each of three passes: ``route(byHead:_:)``, then ``route(path:)``, then,
/// after the kit's own routes, ``route(unclaimedPath:)``. A path no group claims is the kit's 404.
package protocol RouteGroup: Sendable {
    /// Builds the group over `parts`: once for the worker pipeline and once for each inline one, whose service
    /// refuses every call that would block (``ObjectService/inlineView(_:)``).
    init(_ parts: RouteGroupParts)

    /// A route decided by more than the path (the `Host` of a virtual-host request, a header), before any group
    /// reads the path; nil when the head names none of this group's. Asked only of groups that say they route by
    /// the head (``routesByHead``): every request pays for the asking.
    static func route(byHead head: HTTPRequestHead, _ configuration: ServerConfiguration) throws -> (any RouteTarget)?

    /// Whether ``route(byHead:_:)`` may answer anything but nil.
    static var routesByHead: Bool { get }

    /// The route for `rawPath` (still percent-encoded) when the path is this group's, nil when it is not. A pure
    /// function of the path: the answers are kept per thread (``TargetMemo``). Throws `.invalidArgument` for a path
    /// of this group's that is malformed (escapes, an invalid bucket or object name).
    static func route(path rawPath: String) throws -> (any RouteTarget)?

    /// A route for a path that no group's ``route(path:)`` and none of the kit's routes claimed (the XML API's
    /// path style, `/{bucket}/{object}`, whose first segment may be anything); pure, like that.
    static func route(unclaimedPath rawPath: String) throws -> (any RouteTarget)?

    /// The label of a path this group refused (its routing threw).
    static func refusedLabel(_ rawPath: String) -> RouteLabel

    /// The answer for `target`, one of this group's. Nil is the kit's 404, in this group's error shape. A thrown
    /// error is answered in that shape too (``errorShape(for:rawPath:)``). `pipeline` runs requests of their own (a
    /// batch's calls).
    func handle(_ target: any RouteTarget, _ context: RequestContext, _ pipeline: RequestPipeline) throws
        -> RequestDisposition?

    /// The access decision a session of `api` makes again when it commits, nil when `api` is not this group's.
    static func commitAccess(_ api: UploadSession.API) -> WriteAccess?

    /// The shape of errors for a request this group routed (`target`) or refused (nil); nil for the kit's.
    func errorShape(for target: (any RouteTarget)?, rawPath: String) -> (any ErrorShape)?

    /// Every ``RouteTarget/operationID(_:)`` this group may answer, and the ids of operations it answers 501.
    static var operationIDs: Set<String> { get }
}

extension RouteGroup {
    package static func route(byHead head: HTTPRequestHead, _ configuration: ServerConfiguration) throws
        -> (any RouteTarget)?
    { nil }
    package static var routesByHead: Bool { false }
    package static func route(unclaimedPath rawPath: String) throws -> (any RouteTarget)? { nil }
    package static func refusedLabel(_ rawPath: String) -> RouteLabel { .invalid }
    package static func commitAccess(_ api: UploadSession.API) -> WriteAccess? { nil }
    package func errorShape(for target: (any RouteTarget)?, rawPath: String) -> (any ErrorShape)? { nil }
    package static var operationIDs: Set<String> { [] }
}

/// What a route group is built from: the services every API shares.
package struct RouteGroupParts: Sendable {
    package let service: ObjectService
    /// Upload sessions, shared by every API's resumable and multipart uploads.
    package let registry: SessionRegistry
    /// How a session commits (``SiloServerApp``'s rule: as its starter, decided again at commit).
    package let sessionCommit: SessionCommit
}
