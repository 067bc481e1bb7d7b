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
    case let v0 as FirebaseRoute: return .firebase(v0)
    case let gcs as GCSRoute: return .gcs(gcs)
    case let console as ConsoleRoute: return .console(console.path)
    case let own as KitRoute: return .kit(own)
    default: preconditionFailure("a target of no known group")
    }
}

enum RoutedTarget: Equatable {
    case firebase(FirebaseRoute)
    case gcs(GCSRoute)
    case console([String])
    case kit(KitRoute)
}
