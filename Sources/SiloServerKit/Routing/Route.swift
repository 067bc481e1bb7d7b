import SiloAuth
package import SiloCore
import SiloHTTP

/// Where a request goes, decided from the raw (still percent-encoded) path.
package enum Route: Equatable {
    /// `GET /`: the emulator probe.
    case probe
    /// `/v0/b/{bucket}/o` (or `/o/`): list, and uploads that name the object in the query.
    case firebaseBucket(BucketName)
    /// `/v0/b/{bucket}/o/{object}`.
    case firebaseObject(BucketName, ObjectName)
    /// `POST /internal/reset` (firebase-tools' conformance hook).
    case internalReset
    /// `PUT /internal/setRules`: the running rules replaced (firebase-tools' and `@firebase/rules-unit-testing`'s).
    case internalSetRules
    /// `POST /internal/export`: the emulator export written to a directory (`firebase emulators:export`).
    case internalExport
    /// `GET /openapi.json`: the OpenAPI document of this server.
    case openAPIDocument
    /// `/console[/…]`: the web console's files and its admin API (`/console/api/…`), the raw segments after
    /// `console`. Reserves the path: a bucket named `console` is reachable by the XML API virtual-host style only.
    case console([String])
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
    /// GCS XML API `GET /` with `x-goog-project-id`: the project's buckets (SiloGCSAPI's `XMLRoutes.buckets`).
    case xmlBuckets
    /// `GET /metrics`, `/healthz`, `/readyz`: for operators (the buckets of these names are reachable virtual-host
    /// style only).
    case operations(OperationsEndpoint)
    case unknown

    /// Whether `rawPath` lies under the GCS JSON API's paths (`/storage/`, `/upload/`, `/download/`).
    package static func isJSONAPIPath(_ rawPath: String) -> Bool {
        rawPath.hasPrefix("/storage/") || rawPath.hasPrefix("/upload/") || rawPath.hasPrefix("/download/")
    }

    package var isXML: Bool {
        switch self {
        case .xmlBucket, .xmlObject, .xmlSubresource, .xmlBuckets: true
        default: false
        }
    }

    /// Splits the raw path on `/` before decoding, decodes each segment exactly once, and joins the object
    /// segments with `/` (so both `a%2Fb` and a hand-built `a/b` name the object `a/b`). Throws `.invalidArgument`
    /// for malformed escapes, invalid UTF-8, or an invalid bucket or object name.
    package static func parse(_ rawPath: String) throws -> Route {
        if let v0 = try parseV0(rawPath) { return v0 }
        // Split on the UTF-8 bytes ('/' is ASCII, so every cut is a valid String index); far cheaper than
        // splitting on Characters.
        let segments = rawPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map {
            rawPath[$0.startIndex..<$0.endIndex]
        }
        // segments[0] is the empty string before the leading slash.
        guard segments.count >= 2, segments[0].isEmpty else { return .unknown }
        if segments.count == 2 && segments[1].isEmpty { return .probe }
        if segments.count == 3 && segments[1] == "internal" {
            switch segments[2] {
            case "reset": return .internalReset
            case "setRules": return .internalSetRules
            case "export": return .internalExport
            default: break
            }
        }
        if segments.count == 2 && segments[1] == "openapi.json" { return .openAPIDocument }
        if segments[1] == "console" { return .console(segments.dropFirst(2).map(String.init)) }
        if segments.count == 2, let endpoint = OperationsEndpoint(rawValue: String(segments[1])) {
            return .operations(endpoint)
        }
        if segments.count == 2 && segments[1] == "token" { return .oauthToken }
        if segments.count == 4 && segments[1] == "oauth2" && segments[2] == "v4" && segments[3] == "token" {
            return .oauthToken
        }
        if segments[1] == "batch" {
            let batchPaths: [[Substring]] = [[], [""], ["storage", "v1"], ["storage", "v1", ""]]
            return batchPaths.contains(Array(segments.dropFirst(2))) ? .batch : .unknown
        }
        if segments[1] != "v0" {
            guard jsonAPIRoots.contains(segments[1]) else {
                return try parseXML(bucket: segments[1], segments.dropFirst(2))
            }
            return try parseGCS(segments)
        }
        guard segments.count >= 5, segments[2] == "b", segments[4] == "o" else { return .unknown }
        let bucket = try BucketName(try decode(segments[3]))
        let objectSegments = segments.dropFirst(5)
        if objectSegments.isEmpty || (objectSegments.count == 1 && objectSegments.first!.isEmpty) {
            return .firebaseBucket(bucket)
        }
        let name = try objectSegments.map { try decode($0) }.joined(separator: "/")
        return .firebaseObject(bucket, try ObjectName(name))
    }

    /// `/v0/b/{bucket}/o[/{object}]` without splitting the object part: decoding it whole gives the same name as
    /// decoding each segment and joining them with `/` (a literal `/` decodes to itself), for a fraction of the
    /// allocations — every Firebase request takes this path. Nil when the path does not start with `/v0/b/`.
    private static func parseV0(_ rawPath: String) throws -> Route? {
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
            return try decode(rawPath[start..<utf8.index(start, offsetBy: piece.range.count)])
        }
        switch parts {
        case .notV0: return nil
        case .unknown: return .unknown
        case .bucket(let bucket): return .firebaseBucket(try BucketName(try text(bucket)))
        case .object(let bucket, let object):
            return .firebaseObject(try BucketName(try text(bucket)), try ObjectName(try text(object)))
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

    /// GCS JSON API paths, with or without the `/storage/v1` (or `/download/storage/v1`, `/upload/storage/v1`)
    /// prefix: some Node clients omit it.
    private static func parseGCS(_ all: [Substring]) throws -> Route {
        var segments = Array(all.dropFirst())
        var upload = false
        // GCS's API description gives objects.insert a second path for resumable starts (gsutil uses it):
        // `/resumable/upload/storage/v1/b/{b}/o` is the upload route and nothing else.
        if segments.first == "resumable" {
            guard segments.count >= 2, segments[1] == "upload",
                case .gcsUpload(let bucket) = try parseGCS(Array(all.prefix(1)) + segments.dropFirst())
            else { return .unknown }
            return .gcsUpload(bucket)
        }
        if segments.first == "upload" || segments.first == "download" {
            upload = segments.first == "upload"
            segments.removeFirst()
        }
        if segments.count >= 2 && segments[0] == "storage" && segments[1] == "v1" { segments.removeFirst(2) }
        if !upload, segments.count == 3, segments[0] == "projects", segments[2] == "serviceAccount" {
            let project = try decode(segments[1])
            guard (1...100).contains(project.utf8.count), FieldText.isValid(project) else { return .unknown }
            return .gcsServiceAccount(project)
        }
        if !upload, (3...4).contains(segments.count), segments[0] == "projects", segments[2] == "hmacKeys" {
            let project = try decode(segments[1])
            let accessID = try segments.count == 4 ? decode(segments[3]) : nil
            guard (1...100).contains(project.utf8.count), FieldText.isValid(project),
                accessID.map(HMACSigningKey.isAccessID) ?? true
            else { return .unknown }
            return .gcsHMACKeys(project: project, accessID: accessID)
        }
        if !upload, segments.first == "channels" { return .gcsUnimplemented("notification channels") }
        guard segments.first == "b" else { return .unknown }
        if segments.count == 1 || (segments.count == 2 && segments[1].isEmpty) { return .gcsBuckets }
        let bucket = try BucketName(try decode(segments[1]))
        if segments.count == 2 { return .gcsBucket(bucket) }
        guard segments[2] == "o" else {
            guard !upload else { return .unknown }
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
        return .gcsObject(bucket, try ObjectName(try rest.map { try decode($0) }.joined(separator: "/")))
    }

    /// First path segments that belong to the JSON API (and so are no bucket name in XML path style: such buckets
    /// are reachable virtual-host style only).
    private static let jsonAPIRoots: Set<Substring> = [
        "storage", "upload", "download", "resumable", "b", "projects", "channels",
    ]

    /// The XML API: `/{bucket}[/{object…}]`, every segment percent-decoded (the bucket too: Rust's object_store
    /// encodes the whole path), object segments joined with `/`. A first segment that is no valid bucket name is
    /// no XML route.
    private static func parseXML(bucket rawBucket: Substring, _ objectSegments: ArraySlice<Substring>) throws -> Route {
        guard let bucket = try? BucketName(try decode(rawBucket)) else { return .unknown }
        return try xml(bucket, objectSegments)
    }

    /// The XML API on a virtual host (`{bucket}.{host}`): the whole path names the object.
    static func parseVirtualHost(_ rawPath: String, bucket: BucketName) throws -> Route {
        let segments = rawPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map {
            rawPath[$0.startIndex..<$0.endIndex]
        }
        guard segments.first?.isEmpty == true else { return .unknown }
        return try xml(bucket, segments.dropFirst())
    }

    private static func xml(_ bucket: BucketName, _ objectSegments: ArraySlice<Substring>) throws -> Route {
        if objectSegments.isEmpty || (objectSegments.count == 1 && objectSegments.first!.isEmpty) {
            return .xmlBucket(bucket)
        }
        return .xmlObject(bucket, try ObjectName(try objectSegments.map { try decode($0) }.joined(separator: "/")))
    }

    private static func decode(_ segment: Substring) throws -> String {
        guard let decoded = PercentCoding.decodePathComponent(segment) else {
            throw StorageError(
                .invalidArgument, "malformed percent-encoding or invalid UTF-8 in path segment \(segment.prefix(200))")
        }
        return decoded
    }
}
