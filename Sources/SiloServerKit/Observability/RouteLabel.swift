import Synchronization

/// A route's name in the metrics and the access log, with the API it belongs to (`v0`, `json`, `xml`, or `other`
/// for what is no API's: the probe, the operations endpoints, paths that name nothing). Each route group declares
/// its own as `static let`s, so a label never carries a raw path or a bucket name from a request, and the labels
/// there can be are fixed by the code.
///
/// Labels are numbered as they are first declared, process-wide, so that counting a request is an index into
/// counters allocated up front (``RequestMetrics``). Declaring the same route and API again gives the same label.
///
/// The names are static text, so a label is copied from step to step without reference counting, and read (by the
/// access log) without the table's lock.
package struct RouteLabel: Sendable, Hashable {
    /// Its slot in the counters.
    let index: Int
    private let routeName: StaticString
    private let apiName: StaticString

    /// The label `route` of `api`: snake case and stable, because dashboards and alerts name them. Takes a lock:
    /// declare labels as `static let`s, never per request.
    package init(_ route: StaticString, api: StaticString) {
        let (routeText, apiText) = (route.description, api.description)
        index = Self.declared.withLock { names in
            if let found = names.firstIndex(where: { $0.route == routeText && $0.api == apiText }) { return found }
            precondition(names.count < Self.capacity, "more than \(Self.capacity) route labels declared")
            names.append((routeText, apiText))
            return names.count - 1
        }
        (routeName, apiName) = (route, api)
    }

    /// The route's name.
    var route: String { routeName.description }
    /// The API's name.
    var api: String { apiName.description }

    /// One label is one slot: the names are the slot's.
    package static func == (a: RouteLabel, b: RouteLabel) -> Bool { a.index == b.index }
    package func hash(into hasher: inout Hasher) { hasher.combine(index) }

    /// How many labels there can be: what the counters are allocated for.
    static let capacity = 128

    /// Every label declared so far, by slot (for the scrape, which lists them all).
    static var names: [(route: String, api: String)] { declared.withLock { $0 } }

    private static let declared = Mutex<[(route: String, api: String)]>([])
}

extension RouteLabel {
    /// A path the router refused (malformed escapes, an invalid bucket or object name) outside any API's paths.
    package static let invalid = RouteLabel("invalid", api: "other")
    /// A path that names nothing.
    static let unknown = RouteLabel("unknown", api: "other")
    /// A CORS preflight (`OPTIONS`), answered before routing.
    static let preflight = RouteLabel("preflight", api: "other")
    static let probe = RouteLabel("probe", api: "other")
    static let openAPIDocument = RouteLabel("openapi_document", api: "other")
    static let metrics = RouteLabel("metrics", api: "other")
    static let healthz = RouteLabel("healthz", api: "other")
    static let readyz = RouteLabel("readyz", api: "other")
}
