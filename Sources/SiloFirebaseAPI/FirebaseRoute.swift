package import SiloCore
import SiloHTTP
import SiloServerKit

/// Where a request to Firebase's v0 API or the emulator's control endpoints goes (``FirebaseRouteGroup``), decided
/// from the raw (still percent-encoded) path.
package enum FirebaseRoute: Equatable {
    /// `/v0/b/{bucket}/o` (or `/o/`): list, and uploads that name the object in the query.
    case bucket(BucketName)
    /// `/v0/b/{bucket}/o/{object}`.
    case object(BucketName, ObjectName)
    /// `POST /internal/reset` (firebase-tools' conformance hook).
    case internalReset
    /// `PUT /internal/setRules`: the running rules replaced (firebase-tools' and `@firebase/rules-unit-testing`'s).
    case internalSetRules
    /// `POST /internal/export`: the emulator export written to a directory (`firebase emulators:export`).
    case internalExport
    /// A path under `/v0/` that names nothing.
    case unknown

    /// The route for `rawPath`, nil when it is not under `/v0/` and none of the control endpoints. Object segments
    /// are decoded and joined with `/` (so both `a%2Fb` and a hand-built `a/b` name the object `a/b`); throws
    /// `.invalidArgument` for malformed escapes, invalid UTF-8, or an invalid bucket or object name.
    package static func parse(_ rawPath: String) throws -> FirebaseRoute? {
        if let v0 = try parseV0(rawPath) { return v0 }
        if rawPath.hasPrefix("/v0/") || rawPath == "/v0" { return .unknown }
        switch rawPath {
        case "/internal/reset": return .internalReset
        case "/internal/setRules": return .internalSetRules
        case "/internal/export": return .internalExport
        default: return nil
        }
    }

    /// `/v0/b/{bucket}/o[/{object}]` without splitting the object part: decoding it whole gives the same name as
    /// decoding each segment and joining them with `/` (a literal `/` decodes to itself), for a fraction of the
    /// allocations — every Firebase request takes this path. Nil when the path does not start with `/v0/b/`.
    private static func parseV0(_ rawPath: String) throws -> FirebaseRoute? {
        // Found and decoded over the bytes (every v0 request is routed here first): '/' and 'o' are ASCII, so each
        // piece is whole UTF-8 characters.
        let parts = rawPath.withUTF8Bytes { bytes -> V0Parts in
            let prefix = v0Prefix
            guard bytes.count >= prefix.count else { return .notV0 }
            for index in 0..<prefix.count where bytes[index] != prefix[index] { return .notV0 }
            var slash = prefix.count
            while slash < bytes.count && bytes[slash] != UInt8(ascii: "/") { slash += 1 }
            let o = slash + 1
            guard o < bytes.count, bytes[o] == UInt8(ascii: "o") else { return .unknown }
            let afterO = o + 1
            guard afterO == bytes.count || bytes[afterO] == UInt8(ascii: "/") else { return .unknown }
            func decoded(_ range: Range<Int>) -> Piece {
                Piece(range, PercentCoding.decodePathComponent(utf8: UnsafeBufferPointer(rebasing: bytes[range])))
            }
            let bucket = decoded(prefix.count..<slash)
            // `/o` and `/o/` name the bucket.
            guard afterO + 1 < bytes.count else { return .bucket(bucket) }
            return .object(bucket, decoded((afterO + 1)..<bytes.count))
        }
        /// The decoded text, or the error that names the raw segment.
        func text(_ piece: Piece) throws -> String {
            if let text = piece.decoded { return text }
            let utf8 = rawPath.utf8
            let start = utf8.index(utf8.startIndex, offsetBy: piece.range.lowerBound)
            return try RoutePath.decode(rawPath[start..<utf8.index(start, offsetBy: piece.range.count)])
        }
        switch parts {
        case .notV0: return nil
        case .unknown: return .unknown
        case .bucket(let bucket): return .bucket(try BucketName(try text(bucket)))
        case .object(let bucket, let object):
            return .object(try BucketName(try text(bucket)), try ObjectName(try text(object)))
        }
    }

    private static let v0Prefix = Array("/v0/b/".utf8)

    /// A piece of a `/v0/b/` path: where it lies (byte offsets) and its decoded text, nil when it does not decode.
    private struct Piece {
        var range: Range<Int>
        var decoded: String?
        init(_ range: Range<Int>, _ decoded: String?) {
            self.range = range
            self.decoded = decoded
        }
    }

    private enum V0Parts {
        case notV0
        case unknown
        case bucket(Piece)
        case object(Piece, Piece)
    }

}

/// A v0 route as the pipeline holds it (``RouteTarget``): a reference, so a route is passed on by a retain and the
/// group finds its own route again by a class cast.
final class FirebaseTarget: RouteTarget {
    let route: FirebaseRoute

    init(_ route: FirebaseRoute) { self.route = route }

    var label: RouteLabel {
        switch route {
        case .bucket: Labels.bucket
        case .object: Labels.object
        case .internalReset: Labels.internalReset
        case .internalSetRules: Labels.internalSetRules
        case .internalExport: Labels.internalExport
        case .unknown: Labels.unknown
        }
    }

    /// The metric and access-log names of these routes.
    private enum Labels {
        static let bucket = RouteLabel("firebase_bucket", api: "v0")
        static let object = RouteLabel("firebase_object", api: "v0")
        static let internalReset = RouteLabel("internal_reset", api: "other")
        static let internalSetRules = RouteLabel("internal_set_rules", api: "other")
        static let internalExport = RouteLabel("internal_export", api: "other")
        static let unknown = RouteLabel("unknown", api: "v0")
        static let invalid = RouteLabel("invalid", api: "v0")
    }

    /// A refused path of this group's is always under `/v0/`.
    static var refusedLabel: RouteLabel { Labels.invalid }

    var buckets: [BucketName] {
        switch route {
        case .bucket(let bucket), .object(let bucket, _): [bucket]
        case .internalReset, .internalSetRules, .internalExport, .unknown: []
        }
    }

    /// An upload to the bucket route is logged under the name in its query.
    func logged(_ head: HTTPRequestHead) -> (bucket: BucketName?, object: ObjectName?) {
        switch route {
        case .bucket(let bucket): (bucket, Exchange.postedName(head))
        case .object(let bucket, let name): (bucket, name)
        case .internalReset, .internalSetRules, .internalExport, .unknown: (nil, nil)
        }
    }

    var readsOneObject: Bool {
        if case .object = route { true } else { false }
    }

    /// A v0 object read is made of the live version, the blob and the rules' decision, nothing else.
    var replayableRead: (bucket: BucketName, object: ObjectName)? {
        if case .object(let bucket, let name) = route { (bucket, name) } else { nil }
    }
}
