package import SiloCore
package import SiloHTTP
package import SiloServerKit

/// Firebase Storage's v0 REST API (`/v0/b/{bucket}/o[/{object}]`), as the official SDKs send it, and the Firebase
/// emulator's control endpoints (`/internal/…`). Security Rules are decided by the v0 handlers, because a rule reads
/// the resource the operation is about (and, for writes, the one it proposes).
package struct FirebaseRouteGroup: RouteGroup {
    let routes: FirebaseRoutes
    let service: ObjectService

    package init(_ parts: RouteGroupParts) {
        service = parts.service
        routes = FirebaseRoutes(service: parts.service, registry: parts.registry, sessionCommit: parts.sessionCommit)
    }

    /// Asked first: every v0 request (the SDKs' traffic) is routed here.
    package static func route(path rawPath: String) throws -> (any RouteTarget)? {
        try FirebaseRoute.parse(rawPath).map(FirebaseTarget.init)
    }

    package static func refusedLabel(_ rawPath: String) -> RouteLabel { FirebaseTarget.refusedLabel }

    /// Nil (the kit's 404) for a path under `/v0/` that names nothing and a method a control endpoint does not
    /// serve.
    package func handle(_ target: any RouteTarget, _ context: RequestContext, _ pipeline: RequestPipeline) throws
        -> RequestDisposition?
    {
        switch (target as? FirebaseTarget)?.route {
        case .bucket(let bucket): try routes.bucket(context, bucket)
        case .object(let bucket, let name): try routes.object(context, bucket, name)
        case let control? where control != .unknown: EmulatorControl(service: service).handle(control, context)
        default: nil
        }
    }

    /// Every `/v0/` path answers in the v0 shape, whatever it routes to.
    package func errorShape(for target: (any RouteTarget)?, rawPath: String) -> (any ErrorShape)? {
        rawPath.hasPrefix("/v0/") ? FirebaseErrorShape() : nil
    }

    package static func commitAccess(_ api: UploadSession.API) -> WriteAccess? {
        api == .firebase ? .securityRules : nil
    }
}
