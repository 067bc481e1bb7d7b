package import SiloHTTP
package import SiloServerKit

/// The web console (`/console/…`): its files and its admin API (``ConsoleRoutes``).
package struct ConsoleRouteGroup: RouteGroup {
    let routes: ConsoleRoutes

    package init(_ parts: RouteGroupParts) { routes = ConsoleRoutes(service: parts.service) }

    /// `/console[/…]` reserves the path: a bucket named `console` is reachable by the XML API's virtual-host style
    /// only.
    package static func route(path rawPath: String) throws -> (any RouteTarget)? {
        guard rawPath == "/console" || rawPath.hasPrefix("/console/") else { return nil }
        return ConsoleRoute(path: RoutePath.segments(rawPath).dropFirst(2).map(String.init))
    }

    package func handle(_ target: any RouteTarget, _ context: RequestContext, _ pipeline: RequestPipeline) throws
        -> RequestDisposition?
    {
        guard let route = target as? ConsoleRoute else { return nil }
        return routes.handle(context, route.path)
    }
}

/// A console request: the raw segments after `console` (its files, and its admin API under `api/`).
final class ConsoleRoute: RouteTarget {
    let path: [String]

    init(path: [String]) { self.path = path }

    var label: RouteLabel { Self.label }
    private static let label = RouteLabel("console", api: "other")

    /// The console answers its own origin only (``ConsoleRoutes``).
    var setsOwnCrossOriginPolicy: Bool { true }
}
