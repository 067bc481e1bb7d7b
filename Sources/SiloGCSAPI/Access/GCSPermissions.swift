package import SiloCore
import SiloHTTP
import SiloServerKit

/// A Cloud Storage IAM permission, as bindings, `testIamPermissions` and error messages name it.
package enum GCSPermission: String, CaseIterable, Sendable {
    case bucketsCreate = "storage.buckets.create"
    case bucketsDelete = "storage.buckets.delete"
    case bucketsGet = "storage.buckets.get"
    case bucketsList = "storage.buckets.list"
    case bucketsUpdate = "storage.buckets.update"
    case bucketsRestore = "storage.buckets.restore"
    case bucketsGetIamPolicy = "storage.buckets.getIamPolicy"
    case bucketsSetIamPolicy = "storage.buckets.setIamPolicy"
    case objectsCreate = "storage.objects.create"
    case objectsDelete = "storage.objects.delete"
    case objectsGet = "storage.objects.get"
    case objectsList = "storage.objects.list"
    case objectsUpdate = "storage.objects.update"
    case objectsRestore = "storage.objects.restore"
    case objectsGetIamPolicy = "storage.objects.getIamPolicy"
    case objectsSetIamPolicy = "storage.objects.setIamPolicy"
    case multipartUploadsCreate = "storage.multipartUploads.create"
    case multipartUploadsAbort = "storage.multipartUploads.abort"
    case multipartUploadsList = "storage.multipartUploads.list"
    case multipartUploadsListParts = "storage.multipartUploads.listParts"
    case managedFoldersCreate = "storage.managedFolders.create"
    case managedFoldersDelete = "storage.managedFolders.delete"
    case managedFoldersGet = "storage.managedFolders.get"
    case managedFoldersList = "storage.managedFolders.list"

    /// Granted on the project, not the bucket: no bucket policy or ACL can give them, so only the admin holds them.
    var isProjectLevel: Bool { [.bucketsCreate, .bucketsList, .bucketsRestore].contains(self) }

    /// Whether the `devstorage.read_only` scope allows it.
    var isRead: Bool {
        [
            .bucketsGet, .bucketsList, .objectsGet, .objectsList, .multipartUploadsList, .multipartUploadsListParts,
            .managedFoldersGet, .managedFoldersList,
        ]
        .contains(self)
    }

    /// Whether only `devstorage.full_control` allows it (IAM policies and ACLs).
    var changesAccess: Bool {
        [.bucketsGetIamPolicy, .bucketsSetIamPolicy, .objectsGetIamPolicy, .objectsSetIamPolicy].contains(self)
    }

    /// What a denial names: the kind of resource the permission is about.
    var resourceKind: String { rawValue.hasPrefix("storage.buckets.") ? "bucket" : "object" }
}

/// Which version of an object a requirement is about. Every generation has its own ACL, so an object ACL grants a
/// permission on the version the request addresses and on no other.
package enum ObjectVersion: Equatable, Sendable {
    /// The live version (the request names no generation).
    case live
    /// `generation=` (a copy's `sourceGeneration=`, the XML API's `x-goog-copy-source-generation`).
    case generation(Int64)
    /// `softDeleted=true&generation=` and restore: a soft-deleted version.
    case softDeleted(Int64)
    /// A generation that does not parse names no version, so no object ACL grants anything; the handler refuses it
    /// (400) to a caller the bucket lets in.
    case unreadable

    /// The version `text` names (absent or empty: the live one), parsed as the handlers parse it
    /// (``GCSConditions/generation(_:_:)``), so that the version decided about is the version served.
    static func named(by text: String?, softDeleted: Bool = false) -> ObjectVersion {
        guard let text, !text.isEmpty else { return softDeleted ? .unreadable : .live }
        guard let value = Int64(text), value > 0 else { return .unreadable }
        return softDeleted ? .softDeleted(value) : .generation(value)
    }
}

/// What one request needs, decided from its route, method, query and headers alone (before any body byte).
package enum AccessRequirement: Equatable {
    /// `permission` on the bucket, or on one version of one of its objects (whose own ACL may then grant it).
    case permission(GCSPermission, BucketName, ObjectName?, ObjectVersion = .live)
    /// Nothing: the route is open to every caller (`iam/testPermissions` answers for the caller itself, a
    /// resumable session's id is its credential, as in GCS).
    case none
    /// Decided by the handler from the body (a POST policy form names its object and its signer in its fields).
    case inBody
    /// Nothing grants it but admin credentials or emulator mode.
    case administrator
}

/// The one table from request to GCS permission, for the JSON and the XML API. ``GCSAccess`` checks what it
/// returns once per request, before the handler runs; writes are decided again when they commit
/// (``ObjectService/gcsPinned(_:_:conditions:principal:write:)``).
package enum GCSPermissions {
    static func required(_ route: GCSRoute, _ context: RequestContext) -> [AccessRequirement] {
        let method = context.method
        let read = method == "GET" || method == "HEAD"
        switch route {
        case .gcsBuckets:
            return [.administrator]
        case .gcsBucket(let b):
            switch method {
            case "GET", "HEAD": return [.permission(.bucketsGet, b, nil)]
            case "PATCH", "PUT": return [.permission(.bucketsUpdate, b, nil)]
            case "DELETE": return [.permission(.bucketsDelete, b, nil)]
            default: return [.administrator]
            }
        case .gcsBucketSub(let b, let path):
            return bucketSub(b, path, method: method)
        case .gcsObjects(let b):
            if read { return [.permission(.objectsList, b, nil)] }
            return upload(b, context)
        case .gcsUpload(let b):
            return upload(b, context)
        case .gcsObject(let b, let name):
            let version = addressed(context.query)
            switch method {
            case "GET", "HEAD":
                let softDeleted = context.query["softDeleted"]?.lowercased() == "true"
                return [
                    .permission(
                        .objectsGet, b, name, .named(by: context.query["generation"], softDeleted: softDeleted))
                ]
            case "PATCH", "PUT": return [.permission(.objectsUpdate, b, name, version)]
            case "DELETE": return [.permission(.objectsDelete, b, name, version)]
            default: return [.administrator]
            }
        case .gcsCopy(let source, let sourceName, let destination, let destinationName, _):
            return [
                .permission(.objectsGet, source, sourceName, .named(by: context.query["sourceGeneration"]))
            ] + write(destination, destinationName)
        case .gcsCompose(let b, let name):
            // The sources (and their generations) are named in the body: the handler asks for each one's
            // `objects.get`, and `objects.delete` with `deleteSourceObjects`, once it has read them.
            return [.inBody] + write(b, name)
        case .gcsObjectSub(let b, let name, let path):
            switch (method, path.first) {
            case ("POST", "restore"):
                let restored = ObjectVersion.named(by: context.query["generation"], softDeleted: true)
                var needs: [AccessRequirement] = [.permission(.objectsRestore, b, name, restored)]
                // The restored object keeps the soft-deleted version's ACL only when asked to, and only for a caller
                // who may set that version's ACL; otherwise it gets the bucket's default.
                if context.query["copySourceAcl"]?.lowercased() == "true" {
                    needs.append(.permission(.objectsSetIamPolicy, b, name, restored))
                }
                return needs + write(b, name)
            case ("POST", "moveTo") where path.count == 3:
                guard let destination = try? ObjectName(path[2]) else { return [.administrator] }
                return [.permission(.objectsGet, b, name), .permission(.objectsDelete, b, name)]
                    + write(b, destination)
            case (_, "acl"):
                return [
                    .permission(read ? .objectsGetIamPolicy : .objectsSetIamPolicy, b, name, addressed(context.query))
                ]
            default: return [.administrator]
            }
        case .gcsServiceAccount, .gcsUnimplemented:
            return [.none]
        case .xmlBucket(let b):
            switch method {
            case "GET", "HEAD":
                return [.permission(context.query.contains("uploads") ? .multipartUploadsList : .objectsList, b, nil)]
            case "POST": return [.inBody]
            case "DELETE": return [.permission(.bucketsDelete, b, nil)]
            default: return [.administrator]
            }
        case .xmlObject(let b, let name):
            return xmlObject(b, name, context)
        case .xmlSubresource(let b, let name, let sub):
            return xmlSubresource(b, name, sub, read: read, method: method, version: addressed(context.query))
        default:
            return [.administrator]
        }
    }

    /// The version `?generation=` addresses (the live one without it).
    static func addressed(_ query: QueryParameters) -> ObjectVersion { .named(by: query["generation"]) }

    /// Writing `name` needs `objects.create`, and `objects.delete` as well when it replaces a live object (known
    /// only where the name is): the table says so, ``GCSAccess`` looks.
    package static func write(_ bucket: BucketName, _ name: ObjectName?) -> [AccessRequirement] {
        [.permission(.objectsCreate, bucket, name)]
    }

    private static func upload(_ bucket: BucketName, _ context: RequestContext) -> [AccessRequirement] {
        // A resumable session's URL is its credential (GCS accepts its chunks with no Authorization at all).
        if context.query.contains("upload_id") { return [.none] }
        guard context.method == "POST" else { return [.administrator] }
        return write(bucket, context.query["name"].flatMap { try? ObjectName($0) })
    }

    private static func bucketSub(_ b: BucketName, _ path: [String], method: String) -> [AccessRequirement] {
        let read = method == "GET" || method == "HEAD"
        switch (method, path.first, path.count) {
        case (_, "acl", ...2), (_, "defaultObjectAcl", ...2):
            return [.permission(read ? .bucketsGetIamPolicy : .bucketsSetIamPolicy, b, nil)]
        case ("GET", "iam", 1): return [.permission(.bucketsGetIamPolicy, b, nil)]
        case ("PUT", "iam", 1): return [.permission(.bucketsSetIamPolicy, b, nil)]
        case ("GET", "iam", 2) where path[1] == "testPermissions": return [.none]
        case ("POST", "lockRetentionPolicy", 1): return [.permission(.bucketsUpdate, b, nil)]
        case (_, "managedFolders", ...2):
            switch method {
            case "GET", "HEAD": return [.permission(path.count == 2 ? .managedFoldersGet : .managedFoldersList, b, nil)]
            case "POST": return [.permission(.managedFoldersCreate, b, nil)]
            case "DELETE": return [.permission(.managedFoldersDelete, b, nil)]
            default: return [.administrator]
            }
        default:
            return [.administrator]
        }
    }

    private static func xmlObject(_ b: BucketName, _ name: ObjectName, _ context: RequestContext)
        -> [AccessRequirement]
    {
        let query = context.query
        // The XML API's resumable session URL (`?upload_id=`) is its credential, as in the JSON API.
        if query.contains("upload_id") { return [.none] }
        switch context.method {
        case "GET", "HEAD":
            if query.contains("uploadId") { return [.permission(.multipartUploadsListParts, b, name)] }
            return [.permission(.objectsGet, b, name, addressed(query))]
        case "PUT":
            if query.contains("uploadId") { return [.permission(.multipartUploadsCreate, b, name)] }
            var needs = write(b, name)
            if let source = context.headers["x-goog-copy-source"] {
                // The handler's own parser: the object decided about is the object copied. One it cannot parse
                // is refused (400) before anything is read.
                guard let (bucket, object) = try? XMLCopySource.copySource(source) else { return needs }
                let version = ObjectVersion.named(by: context.headers["x-goog-copy-source-generation"])
                needs.insert(.permission(.objectsGet, bucket, object, version), at: 0)
            }
            return needs
        case "POST":
            if query.contains("uploads") { return [.permission(.multipartUploadsCreate, b, name)] }
            // Completing a multipart upload, or starting a resumable one (`x-goog-resumable: start`): the object
            // is written.
            return write(b, name)
        case "DELETE":
            if query.contains("uploadId") { return [.permission(.multipartUploadsAbort, b, name)] }
            return [.permission(.objectsDelete, b, name, addressed(query))]
        default:
            return [.administrator]
        }
    }

    /// `?acl` and `?defaultObjectAcl` as the JSON API's ACL calls; the bucket configuration as the bucket resource
    /// (read: `buckets.get`; the one write, `PUT ?versioning`: `buckets.update`). Sub-resources Silo does not serve
    /// answer 501 to the admin alone.
    private static func xmlSubresource(
        _ b: BucketName, _ name: ObjectName?, _ sub: XMLSubresource, read: Bool, method: String,
        version: ObjectVersion
    ) -> [AccessRequirement] {
        switch sub {
        case .acl where name != nil:
            return [.permission(read ? .objectsGetIamPolicy : .objectsSetIamPolicy, b, name, version)]
        case .acl, .defaultObjectAcl:
            return [.permission(read ? .bucketsGetIamPolicy : .bucketsSetIamPolicy, b, nil)]
        case .unserved: return [.administrator]
        case _ where name != nil: return [.administrator]
        case .versioning where method == "PUT": return [.permission(.bucketsUpdate, b, nil)]
        default: return read ? [.permission(.bucketsGet, b, nil)] : [.administrator]
        }
    }
}
