package import SiloHTTP
package import SiloServerKit

/// The web console (`/console/…`): its files and its admin API (``ConsoleRoutes``).
package struct ConsoleRouteGroup: RouteGroup {
    let routes: ConsoleRoutes

    package init(_ parts: RouteGroupParts) { routes = ConsoleRoutes(service: parts.service) }

    package func handle(_ route: Route, _ context: RequestContext, _ pipeline: RequestPipeline) throws
        -> RequestDisposition?
    {
        guard case .console(let path) = route else { return nil }
        return routes.handle(context, path)
    }
}
