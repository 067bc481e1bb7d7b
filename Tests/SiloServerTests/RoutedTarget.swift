import SiloServer

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit

/// Where the server as it ships routes a path by the path alone (``Router/route(path:)``), as a value a test can
/// compare; throws the error that refused the path.
func routed(_ rawPath: String) throws -> RoutedTarget {
    let route: Route
    do { route = try Router(SiloServerApp.apis, ServerConfiguration()).route(path: rawPath) } catch {
        throw error.error
    }
    switch route.target {
    case let v0 as FirebaseTarget: return .firebase(v0.route)
    case let gcs as GCSTarget: return .gcs(gcs.route)
    case let console as ConsoleRoute: return .console(console.path)
    case let own as KitTarget: return .kit(own.route)
    default: preconditionFailure("a target of no known group")
    }
}

enum RoutedTarget: Equatable {
    case firebase(FirebaseRoute)
    case gcs(GCSRoute)
    case console([String])
    case kit(KitRoute)
}
