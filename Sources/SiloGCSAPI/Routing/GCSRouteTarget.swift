import SiloCore
import SiloHTTP
import SiloServerKit

/// A GCS route as the pipeline holds it (``RouteTarget``): a reference, so a route is passed on by a retain and the
/// group finds its own route again by a class cast.
final class GCSTarget: RouteTarget {
    let route: GCSRoute

    init(_ route: GCSRoute) { self.route = route }

    var label: RouteLabel {
        switch route {
        case .gcsBuckets: Labels.gcsBuckets
        case .gcsBucket: Labels.gcsBucket
        case .gcsObjects: Labels.gcsObjects
        case .gcsObject: Labels.gcsObject
        case .gcsCopy: Labels.gcsCopy
        case .gcsCompose: Labels.gcsCompose
        case .gcsUpload: Labels.gcsUpload
        case .gcsBucketSub: Labels.gcsBucketSub
        case .gcsObjectSub: Labels.gcsObjectSub
        case .gcsServiceAccount: Labels.gcsServiceAccount
        case .gcsHMACKeys: Labels.gcsHMACKeys
        case .gcsUnimplemented: Labels.gcsUnimplemented
        case .oauthToken: Labels.oauthToken
        case .batch: Labels.batch
        case .xmlBucket: Labels.xmlBucket
        case .xmlObject: Labels.xmlObject
        case .xmlSubresource: Labels.xmlSubresource
        case .xmlBuckets: Labels.xmlBuckets
        case .unknown(let jsonAPIPath): jsonAPIPath ? Labels.unknownJSON : Labels.unknownOther
        }
    }

    /// The metric and access-log names of GCS's routes.
    private enum Labels {
        static let gcsBuckets = RouteLabel("gcs_buckets", api: "json")
        static let gcsBucket = RouteLabel("gcs_bucket", api: "json")
        static let gcsObjects = RouteLabel("gcs_objects", api: "json")
        static let gcsObject = RouteLabel("gcs_object", api: "json")
        static let gcsCopy = RouteLabel("gcs_copy", api: "json")
        static let gcsCompose = RouteLabel("gcs_compose", api: "json")
        static let gcsUpload = RouteLabel("gcs_upload", api: "json")
        static let gcsBucketSub = RouteLabel("gcs_bucket_sub", api: "json")
        static let gcsObjectSub = RouteLabel("gcs_object_sub", api: "json")
        static let gcsServiceAccount = RouteLabel("gcs_service_account", api: "json")
        static let gcsHMACKeys = RouteLabel("gcs_hmac_keys", api: "json")
        static let gcsUnimplemented = RouteLabel("gcs_unimplemented", api: "json")
        static let oauthToken = RouteLabel("oauth_token", api: "other")
        static let batch = RouteLabel("batch", api: "json")
        static let xmlBucket = RouteLabel("xml_bucket", api: "xml")
        static let xmlObject = RouteLabel("xml_object", api: "xml")
        static let xmlSubresource = RouteLabel("xml_subresource", api: "xml")
        static let xmlBuckets = RouteLabel("xml_buckets", api: "xml")
        static let unknownJSON = RouteLabel("unknown", api: "json")
        static let unknownOther = RouteLabel("unknown", api: "other")
        static let invalidJSON = RouteLabel("invalid", api: "json")
    }

    /// A refused JSON API path counts as the JSON API's; any other as no API's.
    static func refusedLabel(_ rawPath: String) -> RouteLabel {
        GCSRoute.isJSONAPIPath(rawPath) ? Labels.invalidJSON : .invalid
    }

    var buckets: [BucketName] {
        switch route {
        case .gcsBucket(let bucket), .gcsObjects(let bucket), .gcsObject(let bucket, _), .gcsCompose(let bucket, _),
            .gcsUpload(let bucket), .gcsBucketSub(let bucket, _), .gcsObjectSub(let bucket, _, _),
            .xmlBucket(let bucket), .xmlObject(let bucket, _), .xmlSubresource(let bucket, _, _):
            [bucket]
        case .gcsCopy(let source, _, let destination, _, _):
            source == destination ? [source] : [source, destination]
        case .gcsBuckets, .gcsServiceAccount, .gcsHMACKeys, .gcsUnimplemented, .oauthToken, .batch, .xmlBuckets,
            .unknown:
            []
        }
    }

    /// A copy is logged under what it writes; an upload to a bucket under the name in its query.
    func logged(_ head: HTTPRequestHead) -> (bucket: BucketName?, object: ObjectName?) {
        switch route {
        case .gcsObjects(let b), .gcsUpload(let b): (b, Exchange.postedName(head))
        case .gcsBucket(let b), .gcsBucketSub(let b, _), .xmlBucket(let b): (b, nil)
        case .gcsObject(let b, let o), .gcsCompose(let b, let o), .gcsObjectSub(let b, let o, _),
            .xmlObject(let b, let o):
            (b, o)
        case .gcsCopy(_, _, let b, let o, _): (b, o)
        case .xmlSubresource(let b, let o, _): (b, o)
        default: (nil, nil)
        }
    }

    var readsOneObject: Bool {
        switch route {
        case .gcsObject, .xmlObject: true
        default: false
        }
    }

    /// The XML API takes signed URLs (V2 and V4).
    var acceptsSignedURLs: Bool { route.isXML }

    /// docs/openapi.json and docs/gcs-api.md list these as not served.
    func unimplementedFeature(method: String) -> String? {
        switch route {
        case .gcsUnimplemented(let what):
            return what
        case .gcsBucketSub(_, let path):
            if let first = path.first, Self.unimplementedBucketResources.contains(first) { return first }
            if path.first == "managedFolders" && path.count >= 3 && path[2] == "iam" {
                return "managed folder IAM policies"
            }
            return nil
        case .gcsObjectSub(_, _, let path):
            return path.first == "iam" ? "object IAM policies" : nil
        case .gcsObject(_, let name) where method == "POST" && ["watch", "bulkRestore"].contains(name.rawValue):
            return "objects.\(name.rawValue)"
        default:
            return nil
        }
    }

    /// Bucket sub-resources of GCS's JSON API that Silo does not serve.
    static let unimplementedBucketResources: Set<String> = [
        "folders", "notificationConfigs", "anywhereCaches", "operations", "relocate", "storageLayout",
    ]

    /// An XML bucket or object whose query names a sub-resource (`?acl`) addresses that sub-resource, so an access
    /// rule written for reading an object never lets a caller read its ACL. A malformed query is refused later, by
    /// ``RequestContext``, in the XML API's shape.
    func refined(by head: HTTPRequestHead) -> (any RouteTarget)? {
        switch route {
        case .xmlBucket(let bucket):
            guard let query = try? TargetMemo.query(head), let sub = XMLSubresource.named(in: query) else { return nil }
            return GCSTarget(.xmlSubresource(bucket, nil, sub))
        case .xmlObject(let bucket, let name):
            guard let query = try? TargetMemo.query(head), let sub = XMLSubresource.named(in: query) else { return nil }
            return GCSTarget(.xmlSubresource(bucket, name, sub))
        default:
            return nil
        }
    }

    func operationID(_ head: HTTPRequestHead) -> String? { route.operationID(head) }
}
