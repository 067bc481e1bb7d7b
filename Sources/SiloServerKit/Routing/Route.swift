package import SiloCore
package import SiloHTTP

/// Where a request goes: what the route group that claimed it parsed from its target (``RouteTarget``, the group's
/// own type, whose cases only that group reads), and which group that is. The kit's own routes (the probe,
/// `/openapi.json`, the operations endpoints, a path nothing claims) have no group.
package struct Route: Sendable {
    package let target: any RouteTarget
    /// The claiming group's place in the pipeline's list (``Router``), nil for the kit's own routes.
    let group: Int?

    init(_ target: any RouteTarget, group: Int?) {
        self.target = target
        self.group = group
    }
}

/// What a route group parses a request's target into. The pipeline reads only what this protocol asks, the same for
/// every API; the group that made a target reads its cases.
///
/// A class: a route is passed from step to step by a retain, and its group finds its own type again by a class
/// cast. A value in an existential is copied through its value witnesses at each step, and cast by copying it out:
/// 540 instructions per request for the cast alone (`bench/instructions.sh unique`).
package protocol RouteTarget: AnyObject, Sendable {
    /// Its name in the metrics and the access log (one of the group's `static let` labels).
    var label: RouteLabel { get }
    /// The buckets it names, which must be served here before anything else happens (a copy names two).
    var buckets: [BucketName] { get }
    /// The bucket and object its access-log line names.
    func logged(_ head: HTTPRequestHead) -> (bucket: BucketName?, object: ObjectName?)
    /// Whether it reads one object's bytes or metadata, and nothing else: only such a request may be answered on an
    /// event loop (``InlinePipeline``).
    var readsOneObject: Bool { get }
    /// The object, when the answer is made of the object's live version, its bytes and the access decision alone, so
    /// that a transport may replay it while those stand (``ReplayableAnswer``).
    var replayableRead: (bucket: BucketName, object: ObjectName)? { get }
    /// Whether a signed URL's query may authenticate the request (``RequestContext``).
    var acceptsSignedURLs: Bool { get }
    /// Whether it sets its own cross-origin policy: the pipeline then adds no CORS headers and refuses preflights.
    var setsOwnCrossOriginPolicy: Bool { get }
    /// A feature it asks for that this server does not implement, answered 501 whatever the request holds and
    /// whether or not the bucket exists, so that a client can tell "not here" from "no such thing".
    func unimplementedFeature(method: String) -> String?
    /// The route as the rest of the request (its query, its headers) makes it more precise, nil when it does not.
    func refined(by head: HTTPRequestHead) -> (any RouteTarget)?
    /// The API's own name for the operation (GCS's method ids, `storage.objects.get`), which fault injection keys
    /// instructions by; nil where the API names none.
    func operationID(_ head: HTTPRequestHead) -> String?
}

extension RouteTarget {
    package var buckets: [BucketName] { [] }
    package func logged(_ head: HTTPRequestHead) -> (bucket: BucketName?, object: ObjectName?) {
        (buckets.last, nil)
    }
    package var readsOneObject: Bool { false }
    package var replayableRead: (bucket: BucketName, object: ObjectName)? { nil }
    package var acceptsSignedURLs: Bool { false }
    package var setsOwnCrossOriginPolicy: Bool { false }
    package func unimplementedFeature(method: String) -> String? { nil }
    package func refined(by head: HTTPRequestHead) -> (any RouteTarget)? { nil }
    package func operationID(_ head: HTTPRequestHead) -> String? { nil }
}

/// The kit's own routes, which no API claims.
enum KitRoute: Equatable {
    /// `GET /`: the emulator probe.
    case probe
    /// `GET /openapi.json`: the OpenAPI document of this server.
    case openAPIDocument
    /// `GET /metrics`, `/healthz`, `/readyz`: for operators (buckets of these names are reachable virtual-host style
    /// only).
    case operations(OperationsEndpoint)
    /// A path that names nothing.
    case unknown

    /// The kit's route for `rawPath`, nil when it is none of the kit's own.
    static func parse(_ rawPath: String) -> KitRoute? {
        switch rawPath {
        case "/": .probe
        case "/openapi.json": .openAPIDocument
        case "/metrics": .operations(.metrics)
        case "/healthz": .operations(.healthz)
        case "/readyz": .operations(.readyz)
        default: nil
        }
    }

    var label: RouteLabel {
        switch self {
        case .probe: .probe
        case .openAPIDocument: .openAPIDocument
        case .operations(.metrics): .metrics
        case .operations(.healthz): .healthz
        case .operations(.readyz): .readyz
        case .unknown: .unknown
        }
    }
}

/// A kit route as the pipeline holds it.
final class KitTarget: RouteTarget {
    let route: KitRoute

    init(_ route: KitRoute) { self.route = route }

    var label: RouteLabel { route.label }

    /// The route of every path nothing claims.
    static let unknown = KitTarget(.unknown)
}

/// Splitting and decoding request paths, as every API's router does.
package enum RoutePath {
    /// The path cut at every `/` (over the UTF-8 bytes: `/` is ASCII, so every cut is a valid index, and this is
    /// far cheaper than splitting on Characters); the first segment is the empty string before the leading slash.
    package static func segments(_ rawPath: String) -> [Substring] {
        rawPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map {
            rawPath[$0.startIndex..<$0.endIndex]
        }
    }

    /// One segment percent-decoded; `.invalidArgument` for malformed escapes or invalid UTF-8.
    package static func decode(_ segment: Substring) throws -> String {
        guard let decoded = PercentCoding.decodePathComponent(segment) else {
            throw StorageError(
                .invalidArgument, "malformed percent-encoding or invalid UTF-8 in path segment \(segment.prefix(200))")
        }
        return decoded
    }

    /// Segments decoded and joined with `/`, so both `a%2Fb` and a hand-built `a/b` name the object `a/b`.
    package static func objectName<S: Sequence<Substring>>(_ segments: S) throws -> ObjectName {
        try ObjectName(try segments.map { try decode($0) }.joined(separator: "/"))
    }
}
