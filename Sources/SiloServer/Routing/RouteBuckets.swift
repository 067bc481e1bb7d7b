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
        case .probe, .internalReset, .openAPIDocument, .gcsBuckets, .gcsServiceAccount, .gcsHMACKeys,
            .gcsUnimplemented, .oauthToken, .batch, .xmlBuckets, .unknown:
            []
        }
    }

    /// An object's bytes or metadata, not a listing or a sub-resource (what may be answered inline).
    var readsOneObject: Bool {
        switch self {
        case .firebaseObject, .gcsObject, .xmlObject: true
        default: false
        }
    }
}
