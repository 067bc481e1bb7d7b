import SiloCore

extension Route {
    /// The buckets the route names, which must be served here before anything else happens (a copy names two).
    var buckets: [BucketName] {
        switch self {
        case .firebaseBucket(let bucket), .firebaseObject(let bucket, _), .gcsBucket(let bucket),
            .gcsObjects(let bucket), .gcsObject(let bucket, _), .gcsCompose(let bucket, _), .gcsUpload(let bucket),
            .gcsBucketSub(let bucket, _), .gcsObjectSub(let bucket, _, _), .xmlBucket(let bucket),
            .xmlObject(let bucket, _), .xmlSubresource(let bucket, _, _):
            [bucket]
        case .gcsCopy(let source, _, let destination, _, _):
            source == destination ? [source] : [source, destination]
        case .probe, .internalReset, .internalSetRules, .internalExport, .openAPIDocument, .console, .gcsBuckets,
            .gcsServiceAccount, .gcsHMACKeys,
            .gcsUnimplemented, .oauthToken, .batch, .xmlBuckets, .operations, .unknown:
            []
        }
    }

    /// The GCS JSON API feature the request asks for that Silo does not serve, if it does: answered 501 whatever the
    /// request holds and whether or not the bucket exists (docs/openapi.json), so that a client can tell "not here"
    /// from "no such thing". The one list the pipeline and the handlers go by.
    func unimplementedFeature(method: String) -> String? {
        switch self {
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

    /// An object's bytes or metadata, not a listing or a sub-resource (what may be answered inline).
    var readsOneObject: Bool {
        switch self {
        case .firebaseObject, .gcsObject, .xmlObject: true
        default: false
        }
    }
}
