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

    package func handle(_ route: Route, _ context: RequestContext, _ pipeline: RequestPipeline) throws
        -> RequestDisposition?
    {
        switch route {
        case .firebaseBucket(let bucket): try routes.bucket(context, bucket)
        case .firebaseObject(let bucket, let name): try routes.object(context, bucket, name)
        case .internalReset, .internalSetRules, .internalExport:
            EmulatorControl(service: service).handle(route, context)
        default: nil
        }
    }

    /// Every `/v0/` path answers in the v0 shape, whatever it routes to.
    package func errorShape(for route: Route?, rawPath: String) -> (any ErrorShape)? {
        rawPath.hasPrefix("/v0/") ? FirebaseErrorShape() : nil
    }

    package static func commitAccess(_ api: UploadSession.API) -> WriteAccess? {
        api == .firebase ? .securityRules : nil
    }
}
