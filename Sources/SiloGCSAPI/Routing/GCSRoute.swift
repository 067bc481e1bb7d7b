import SiloAuth
package import SiloCore
import SiloHTTP
import SiloServerKit

/// Where a request to one of GCS's APIs goes (``GCSRouteGroup``), decided from the raw (still percent-encoded) path:
/// the JSON API (with its batch endpoint, HMAC keys and the project's service agent), the OAuth token endpoint, and
/// the XML API, path style or on a virtual host.
package enum GCSRoute: Equatable, Sendable {
    /// GCS JSON API `/storage/v1/b` (and unprefixed `/b`): bucket list and insert.
    case gcsBuckets
    /// `/storage/v1/b/{bucket}`.
    case gcsBucket(BucketName)
    /// `/storage/v1/b/{bucket}/o`: object list.
    case gcsObjects(BucketName)
    /// `/storage/v1/b/{bucket}/o/{object}` (and `/download/storage/v1/…`).
    case gcsObject(BucketName, ObjectName)
    /// `/storage/v1/b/{b}/o/{o}/copyTo|rewriteTo/b/{b2}/o/{o2}`.
    case gcsCopy(source: BucketName, ObjectName, destination: BucketName, ObjectName, rewrite: Bool)
    /// `/storage/v1/b/{bucket}/o/{object}/compose`.
    case gcsCompose(BucketName, ObjectName)
    /// `/upload/storage/v1/b/{bucket}/o` (and `/resumable/upload/storage/v1/b/{bucket}/o`): uploads and resumable
    /// sessions.
    case gcsUpload(BucketName)
    /// `/storage/v1/b/{bucket}/{sub…}` other than `o`: `lockRetentionPolicy`, `acl[/entity]`,
    /// `defaultObjectAcl[/entity]`, `iam[/testPermissions]`, `restore`, `managedFolders[/name]`, `folders[/name]`.
    case gcsBucketSub(BucketName, [String])
    /// `/storage/v1/b/{bucket}/o/{object}/{sub…}`: `acl[/entity]`, `restore`, `moveTo/o/{destination}`.
    case gcsObjectSub(BucketName, ObjectName, [String])
    /// `/storage/v1/projects/{project}/serviceAccount`: the project's GCS service agent.
    case gcsServiceAccount(String)
    /// `/storage/v1/projects/{project}/hmacKeys[/{accessId}]`: HMAC keys.
    case gcsHMACKeys(project: String, accessID: String?)
    /// A GCS JSON API resource Silo does not serve (`channels`): 501.
    case gcsUnimplemented(String)
    /// `POST /token` and `POST /oauth2/v4/token`: the OAuth 2.0 token endpoint for service accounts (the bucket
    /// `token` and the object `v4/token` of bucket `oauth2` are reachable virtual-host style only).
    case oauthToken
    /// `POST /batch/storage/v1` (also `/batch/storage/v1/` and `/batch`): a `multipart/mixed` batch of JSON API calls.
    case batch
    /// GCS XML API, path style `/{bucket}` (or virtual-host style, `/` on `{bucket}.{host}`): list objects, POST
    /// policy form uploads.
    case xmlBucket(BucketName)
    /// GCS XML API, path style `/{bucket}/{object…}` (or `/{object…}` on `{bucket}.{host}`).
    case xmlObject(BucketName, ObjectName)
    /// GCS XML API: a sub-resource of a bucket (no object) or an object, named by a query key (`?acl`, `?versioning`,
    /// …), never the bucket or the object itself (``XMLSubresource``).
    case xmlSubresource(BucketName, ObjectName?, XMLSubresource)
    /// GCS XML API `GET /` with `x-goog-project-id`: the project's buckets (``XMLServiceListing``).
    case xmlBuckets
    /// A path under the JSON API's roots, the batch endpoint's or the token endpoint's that names nothing;
    /// `jsonAPIPath` when it lies under `/storage/`, `/upload/` or `/download/` (``isJSONAPIPath(_:)``), whose 404s
    /// are the JSON API's. The others' are answered as any path that names nothing.
    case unknown(jsonAPIPath: Bool)

    /// Whether `rawPath` lies under the GCS JSON API's paths (`/storage/`, `/upload/`, `/download/`).
    package static func isJSONAPIPath(_ rawPath: String) -> Bool {
        rawPath.hasPrefix("/storage/") || rawPath.hasPrefix("/upload/") || rawPath.hasPrefix("/download/")
    }

    var isXML: Bool {
        switch self {
        case .xmlBucket, .xmlObject, .xmlSubresource, .xmlBuckets: true
        default: false
        }
    }

    /// The route for `rawPath` when it is one of the JSON API's, the token endpoint or the batch endpoint; nil when
    /// it is not (``route(unclaimedPath:)`` may still make it an XML one). Throws `.invalidArgument` for malformed
    /// escapes, invalid UTF-8, or an invalid bucket or object name.
    package static func parse(_ rawPath: String) throws -> GCSRoute? {
        let unknown = GCSRoute.unknown(jsonAPIPath: isJSONAPIPath(rawPath))
        let segments = RoutePath.segments(rawPath)
        // segments[0] is the empty string before the leading slash.
        guard segments.count >= 2, segments[0].isEmpty else { return nil }
        if segments.count == 2 && segments[1] == "token" { return .oauthToken }
        if segments.count == 4 && segments[1] == "oauth2" && segments[2] == "v4" && segments[3] == "token" {
            return .oauthToken
        }
        if segments[1] == "batch" {
            let batchPaths: [[Substring]] = [[], [""], ["storage", "v1"], ["storage", "v1", ""]]
            return batchPaths.contains(Array(segments.dropFirst(2))) ? .batch : unknown
        }
        guard jsonAPIRoots.contains(segments[1]) else { return nil }
        return try parseGCS(segments, unknown)
    }

    /// The XML API's path style, `/{bucket}[/{object…}]`, for a path nothing else claimed: nil when the first
    /// segment is no valid bucket name.
    package static func parseXML(_ rawPath: String) throws -> GCSRoute? {
        let segments = RoutePath.segments(rawPath)
        guard segments.count >= 2, segments[0].isEmpty else { return nil }
        return try parseXML(bucket: segments[1], segments.dropFirst(2))
    }

    /// GCS JSON API paths, with or without the `/storage/v1` (or `/download/storage/v1`, `/upload/storage/v1`)
    /// prefix: some Node clients omit it.
    private static func parseGCS(_ all: [Substring], _ unknown: GCSRoute) throws -> GCSRoute {
        var segments = Array(all.dropFirst())
        var upload = false
        // GCS's API description gives objects.insert a second path for resumable starts (gsutil uses it):
        // `/resumable/upload/storage/v1/b/{b}/o` is the upload route and nothing else.
        if segments.first == "resumable" {
            guard segments.count >= 2, segments[1] == "upload",
                case .gcsUpload(let bucket) = try parseGCS(Array(all.prefix(1)) + segments.dropFirst(), unknown)
            else { return unknown }
            return .gcsUpload(bucket)
        }
        if segments.first == "upload" || segments.first == "download" {
            upload = segments.first == "upload"
            segments.removeFirst()
        }
        if segments.count >= 2 && segments[0] == "storage" && segments[1] == "v1" { segments.removeFirst(2) }
        if !upload, segments.count == 3, segments[0] == "projects", segments[2] == "serviceAccount" {
            let project = try decode(segments[1])
            guard (1...100).contains(project.utf8.count), FieldText.isValid(project) else { return unknown }
            return .gcsServiceAccount(project)
        }
        if !upload, (3...4).contains(segments.count), segments[0] == "projects", segments[2] == "hmacKeys" {
            let project = try decode(segments[1])
            let accessID = try segments.count == 4 ? decode(segments[3]) : nil
            guard (1...100).contains(project.utf8.count), FieldText.isValid(project),
                accessID.map(HMACSigningKey.isAccessID) ?? true
            else { return unknown }
            return .gcsHMACKeys(project: project, accessID: accessID)
        }
        if !upload, segments.first == "channels" { return .gcsUnimplemented("notification channels") }
        guard segments.first == "b" else { return unknown }
        if segments.count == 1 || (segments.count == 2 && segments[1].isEmpty) { return .gcsBuckets }
        let bucket = try BucketName(try decode(segments[1]))
        if segments.count == 2 { return .gcsBucket(bucket) }
        guard segments[2] == "o" else {
            guard !upload else { return unknown }
            return .gcsBucketSub(bucket, try segments.dropFirst(2).map { try decode($0) })
        }
        if upload { return .gcsUpload(bucket) }
        let rest = Array(segments.dropFirst(3))
        if rest.isEmpty || (rest.count == 1 && rest[0].isEmpty) { return .gcsObjects(bucket) }
        if rest.count == 2 && rest[1] == "compose" { return .gcsCompose(bucket, try ObjectName(try decode(rest[0]))) }
        // The JSON API encodes `/` in names, so a known sub-resource after the first segment is one (`o/x/acl` is
        // the ACL of `x`, not an object `x/acl`).
        if rest.count >= 2, ["acl", "restore", "moveTo", "iam"].contains(rest[1]) {
            return .gcsObjectSub(
                bucket, try ObjectName(try decode(rest[0])), try rest.dropFirst().map { try decode($0) })
        }
        if rest.count == 6 && (rest[1] == "copyTo" || rest[1] == "rewriteTo") && rest[2] == "b" && rest[4] == "o" {
            return .gcsCopy(
                source: bucket, try ObjectName(try decode(rest[0])), destination: try BucketName(try decode(rest[3])),
                try ObjectName(try decode(rest[5])), rewrite: rest[1] == "rewriteTo")
        }
        return .gcsObject(bucket, try RoutePath.objectName(rest))
    }

    /// First path segments that belong to the JSON API (and so are no bucket name in XML path style: such buckets
    /// are reachable virtual-host style only).
    private static let jsonAPIRoots: Set<Substring> = [
        "storage", "upload", "download", "resumable", "b", "projects", "channels",
    ]

    /// The XML API: `/{bucket}[/{object…}]`, every segment percent-decoded (the bucket too: Rust's object_store
    /// encodes the whole path), object segments joined with `/`. A first segment that is no valid bucket name is
    /// no XML route.
    private static func parseXML(bucket rawBucket: Substring, _ objectSegments: ArraySlice<Substring>) throws
        -> GCSRoute?
    {
        guard let bucket = try? BucketName(try decode(rawBucket)) else { return nil }
        return try xml(bucket, objectSegments)
    }

    /// The XML API on a virtual host (`{bucket}.{host}`): the whole path names the object.
    static func parseVirtualHost(_ rawPath: String, bucket: BucketName) throws -> GCSRoute {
        let segments = RoutePath.segments(rawPath)
        guard segments.first?.isEmpty == true else { return .unknown(jsonAPIPath: false) }
        return try xml(bucket, segments.dropFirst())
    }

    private static func xml(_ bucket: BucketName, _ objectSegments: ArraySlice<Substring>) throws -> GCSRoute {
        if objectSegments.isEmpty || (objectSegments.count == 1 && objectSegments.first!.isEmpty) {
            return .xmlBucket(bucket)
        }
        return .xmlObject(bucket, try RoutePath.objectName(objectSegments))
    }

    private static func decode(_ segment: Substring) throws -> String { try RoutePath.decode(segment) }
}
