/// The route a request took, as a metric label and an access-log field: one name per case of ``Route``, the
/// router's own list, so a label can never carry a raw path or a bucket name from the request.
enum RouteLabel: Int, CaseIterable, Sendable {
    case probe, firebaseBucket, firebaseObject, internalReset, internalSetRules, internalExport, openAPIDocument
    case gcsBuckets, gcsBucket, gcsObjects
    case gcsObject, gcsCopy, gcsCompose, gcsUpload, gcsBucketSub, gcsObjectSub, gcsServiceAccount, gcsHMACKeys
    case gcsUnimplemented, oauthToken, batch, xmlBucket, xmlObject, xmlSubresource, xmlBuckets
    case metrics, healthz, readyz, console
    /// A path that names no route.
    case unknown
    /// A path the router refused (malformed escapes, an invalid bucket or object name) or a refused credential.
    case invalid
    /// A CORS preflight (`OPTIONS`), answered before routing.
    case preflight

    init(_ route: Route) {
        self =
            switch route {
            case .probe: .probe
            case .firebaseBucket: .firebaseBucket
            case .firebaseObject: .firebaseObject
            case .internalReset: .internalReset
            case .internalSetRules: .internalSetRules
            case .internalExport: .internalExport
            case .openAPIDocument: .openAPIDocument
            case .gcsBuckets: .gcsBuckets
            case .gcsBucket: .gcsBucket
            case .gcsObjects: .gcsObjects
            case .gcsObject: .gcsObject
            case .gcsCopy: .gcsCopy
            case .gcsCompose: .gcsCompose
            case .gcsUpload: .gcsUpload
            case .gcsBucketSub: .gcsBucketSub
            case .gcsObjectSub: .gcsObjectSub
            case .gcsServiceAccount: .gcsServiceAccount
            case .gcsHMACKeys: .gcsHMACKeys
            case .gcsUnimplemented: .gcsUnimplemented
            case .oauthToken: .oauthToken
            case .batch: .batch
            case .xmlBucket: .xmlBucket
            case .xmlObject: .xmlObject
            case .xmlSubresource: .xmlSubresource
            case .xmlBuckets: .xmlBuckets
            case .operations(.metrics): .metrics
            case .operations(.healthz): .healthz
            case .operations(.readyz): .readyz
            case .console: .console
            case .unknown: .unknown
            }
    }

    /// The label value: snake case, stable (dashboards and alerts name it); in case order.
    var name: String { Self.names[rawValue] }

    private static let names = [
        "probe", "firebase_bucket", "firebase_object", "internal_reset", "internal_set_rules", "internal_export",
        "openapi_document", "gcs_buckets",
        "gcs_bucket", "gcs_objects", "gcs_object", "gcs_copy", "gcs_compose", "gcs_upload", "gcs_bucket_sub",
        "gcs_object_sub", "gcs_service_account", "gcs_hmac_keys", "gcs_unimplemented", "oauth_token", "batch",
        "xml_bucket", "xml_object", "xml_subresource", "xml_buckets", "metrics", "healthz", "readyz", "console",
        "unknown",
        "invalid", "preflight",
    ]

    /// The API a route belongs to; for paths that name no route, the API whose paths they look like.
    func api(rawPath: String) -> APILabel {
        switch self {
        case .firebaseBucket, .firebaseObject: .v0
        case .gcsBuckets, .gcsBucket, .gcsObjects, .gcsObject, .gcsCopy, .gcsCompose, .gcsUpload, .gcsBucketSub,
            .gcsObjectSub, .gcsServiceAccount, .gcsHMACKeys, .gcsUnimplemented, .batch:
            .json
        case .xmlBucket, .xmlObject, .xmlSubresource, .xmlBuckets: .xml
        case .probe, .internalReset, .internalSetRules, .internalExport, .openAPIDocument, .oauthToken, .metrics,
            .healthz, .readyz, .console, .preflight:
            .other
        case .unknown, .invalid:
            if rawPath.hasPrefix("/v0/") {
                .v0
            } else if Route.isJSONAPIPath(rawPath) {
                .json
            } else {
                .other
            }
        }
    }
}

/// Which API a request spoke: `v0` (Firebase), `json` (GCS JSON API), `xml` (GCS XML API), or `other` (the probe,
/// the token endpoint, the operations endpoints, paths that name nothing).
enum APILabel: Int, CaseIterable, Sendable {
    case v0, json, xml, other

    var name: String {
        switch self {
        case .v0: "v0"
        case .json: "json"
        case .xml: "xml"
        case .other: "other"
        }
    }
}
