import SiloCore
import SiloHTTP

/// The pipeline's stage before any handler: a feature the route asks for that this server does not implement
/// (501, whatever the request holds), and every bucket the route names that this server does not serve (404, before
/// any store is asked).
struct ServedBuckets: Sendable {
    let service: ObjectService

    enum Refusal: Error {
        case unimplemented(StorageError)
        case notServed(StorageError)
    }

    /// Why `route` may not go on to its handler, nil when it may.
    func refusal(_ route: Route, method: String) -> Refusal? {
        if let feature = route.target.unimplementedFeature(method: method) {
            return .unimplemented(
                StorageError(
                    .unimplemented, "\(feature) is not implemented by this server (docs/gcs-api.md lists what is)"))
        }
        do { try service.checkServed(route) } catch { return .notServed(StorageError.wrap(error)) }
        return nil
    }
}
