import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// GCS JSON API bucket operations: list, insert, get, patch, update, delete, lockRetentionPolicy — the whole
/// bucket resource (``BucketResource``), with `ifMetagenerationMatch` / `NotMatch` on get, patch, update, delete.
struct GCSBucketRoutes {
    let service: ObjectService

    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    /// The bucket resource; with `projection=full` its ACLs and owner too, to a caller who holds
    /// `storage.buckets.getIamPolicy` (GCS leaves them out for anyone else).
    package func render(_ record: BucketRecord, _ context: RequestContext) -> JSONValue {
        let full =
            context.query["projection"] == "full"
            && GCSAccess(service: service).holds(.bucketsGetIamPolicy, record.name, context.principal)
        return GCSJSON.bucket(
            record, base: service.externalBase(context),
            extra: BucketResource(record).rendered(full: full, name: record.name))
    }

    /// A soft-deleted bucket: its resource with `softDeleteTime` and `hardDeleteTime`.
    package func render(_ found: SoftDeletedBucket, _ context: RequestContext) -> JSONValue {
        var extra = BucketResource(found.record).rendered(full: false, name: found.record.name)
        extra["softDeleteTime"] = .string(found.deletion.at.rfc3339)
        extra["hardDeleteTime"] = .string(found.deletion.hardDeleteAt.rfc3339)
        return GCSJSON.bucket(found.record, base: service.externalBase(context), extra: extra)
    }

    package func buckets(_ context: RequestContext) -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD":
            return .respond(
                run {
                    if context.query["softDeleted"]?.lowercased() == "true" {
                        let deleted = try service.metadata.softDeletedBuckets()
                        var o: JSONObject = ["kind": .string("storage#buckets")]
                        if !deleted.isEmpty { o["items"] = .array(deleted.map { render($0, context) }) }
                        return Reply.json(200, .object(o))
                    }
                    var records = try listed(project: context.query["project"])
                    if let prefix = context.query["prefix"], !prefix.isEmpty {
                        records = records.filter { $0.name.rawValue.hasPrefix(prefix) }
                    }
                    var o: JSONObject = ["kind": .string("storage#buckets")]
                    if !records.isEmpty { o["items"] = .array(records.map { render($0, context) }) }
                    return Reply.json(200, .object(o))
                })
        case "POST":
            return withBody(context) { json in
                guard let name = json["name"]?.stringValue else {
                    throw StorageError(.invalidArgument, "a new bucket needs a name")
                }
                let record = try create(
                    try BucketName(name), json,
                    enableObjectRetention: context.query["enableObjectRetention"]?.lowercased() == "true",
                    project: context.query["project"], time: context.time
                ) { try Self.applyPredefined(context.query, to: &$0) }
                return Reply.json(200, render(record, context))
            }
        default:
            return .respond(Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on /b")))
        }
    }

    /// The buckets a listing shows: all, or those `--bucket` serves; with `project`, only that project's (see
    /// ``BucketResource/project(of:)``). The XML API's `GET /` lists them too.
    package func listed(project: String?) throws -> [BucketRecord] {
        var records = try service.metadata.buckets()
        if let served = service.configuration.buckets { records = records.filter { served.contains($0.name) } }
        guard let project, !project.isEmpty else { return records }
        return records.filter { BucketResource.project(of: $0).map { $0 == project } ?? true }
    }

    package func bucket(_ context: RequestContext, _ name: BucketName) -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD":
            return .respond(
                run {
                    try service.checkServed(name)
                    if context.query["softDeleted"]?.lowercased() == "true" {
                        guard let generation = try GCSConditions.generation(context.query) else {
                            throw StorageError(
                                .invalidArgument, "Invalid argument: softDeleted=true needs a generation")
                        }
                        guard
                            let found = try service.metadata.softDeletedBuckets().first(where: {
                                $0.record.name == name && $0.record.generation == generation
                            })
                        else { throw StorageError(.notFound, "No such soft-deleted bucket: \(name)#\(generation)") }
                        return Reply.json(200, render(found, context))
                    }
                    // A bucket named with --bucket exists from the start, as the emulator's default bucket does.
                    let found =
                        try service.configuration.buckets != nil
                        ? service.metadata.ensureBucket(name) : service.metadata.bucket(name)
                    guard let record = found else { throw StorageError.noSuchBucket(name) }
                    try Self.check(try conditions(context), record, read: true)
                    return Reply.json(200, render(record, context))
                })
        case "PATCH", "PUT":
            return withBody(context) { json in
                let record = try update(
                    name, json, replacing: context.method == "PUT", conditions: try conditions(context),
                    time: context.time
                ) { try Self.applyPredefined(context.query, to: &$0) }
                return Reply.json(200, render(record, context))
            }
        case "DELETE":
            return .respond(
                run {
                    try delete(name, conditions: try conditions(context), time: context.time)
                    return Reply.empty(204)
                })
        default:
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on a bucket")))
        }
    }

    /// Creates `bucket` from its JSON resource (validated, GCS's defaults filled in), `adjust`ed before it is
    /// stored; throws 409 when it exists. The XML API's bucket PUT makes one from its name alone.
    package func create(
        _ bucket: BucketName, _ json: JSONObject, enableObjectRetention: Bool, project: String?, time: Timestamp,
        adjust: (inout BucketResource) throws -> Void = { _ in }
    ) throws -> BucketRecord {
        try service.checkServed(bucket)
        var resource = try BucketResource.inserted(json, enableObjectRetention: enableObjectRetention, now: time)
        if let project, !project.isEmpty {
            guard project.utf8.count <= 100, FieldText.isValid(project) else {
                throw StorageError(.invalidArgument, "Invalid argument: project \(project.prefix(40))")
            }
            resource.fields[BucketResource.projectKey] = .string(project)
        }
        try adjust(&resource)
        return try service.metadata.createBucket(
            BucketRecord(
                name: bucket, timeCreated: time, updated: time, versioning: resource.versioning,
                resource: resource.json))
    }

    /// PATCH (`replacing` false: `json` merges) or PUT (`json` is the whole resource) of the bucket resource, `adjust`ed
    /// before it is stored, with its metageneration `conditions` checked in the store's transaction. The XML API's
    /// `PUT ?versioning` is a PATCH of `versioning`.
    package func update(
        _ name: BucketName, _ json: JSONObject, replacing: Bool, conditions: Preconditions, time: Timestamp,
        adjust: (inout BucketResource) throws -> Void = { _ in }
    ) throws -> BucketRecord {
        try service.requireBucket(name)
        return try service.metadata.updateBucket(name, at: time) { bucket in
            try Self.check(conditions, bucket, read: false)
            var resource = BucketResource(bucket)
            try resource.update(json, replacing: replacing, now: time)
            try adjust(&resource)
            bucket.versioning = resource.versioning
            bucket.resource = resource.json
        }
    }

    /// Deletes an empty bucket (409 while any version is in it) with its metageneration `conditions`; one with a
    /// soft-delete policy stays restorable for its duration, as in GCS.
    package func delete(_ name: BucketName, conditions: Preconditions, time: Timestamp) throws {
        try service.checkServed(name)
        let softDeletion = ObjectService.softDeletion(try service.bucketResource(name), at: time)
        try service.metadata.deleteBucket(
            name, check: { try Self.check(conditions, $0, read: false) }, softDeletion: softDeletion)
    }

    /// `/b/{bucket}/…` other than objects.
    package func sub(_ context: RequestContext, _ name: BucketName, _ path: [String]) -> RequestDisposition {
        switch (context.method, path) {
        case ("POST", ["restore"]):
            return .respond(
                run {
                    guard let generation = try GCSConditions.generation(context.query) else {
                        throw StorageError(.invalidArgument, "Invalid argument: restore needs a bucket generation")
                    }
                    try service.checkServed(name)
                    return Reply.json(
                        200,
                        render(
                            try service.metadata.restoreBucket(name, generation: generation, at: context.time), context)
                    )
                })
        case ("POST", ["lockRetentionPolicy"]):
            return .respond(run { try lockRetentionPolicy(context, name) })
        case _ where path.count <= 2 && (path.first == "acl" || path.first == "defaultObjectAcl"):
            return GCSAccessControlRoutes(service: service).handle(
                context, name, path.first == "acl" ? .bucket : .defaultObject, entity: path.dropFirst().first)
        case _ where path.first == "managedFolders" && path.count <= 2:
            return ManagedFolders(service: service).handle(context, name, path.dropFirst().first)
        case ("GET", ["iam"]):
            return .respond(run { try BucketIAM(service: service).get(context, name) })
        case ("PUT", ["iam"]):
            return GCSBody.json(service, context) { try BucketIAM(service: service).set(context, name, $0) }
        case ("GET", ["iam", "testPermissions"]):
            return .respond(run { try BucketIAM(service: service).test(context, name) })
        default:
            return .respond(
                Reply.gcsError(
                    StorageError(.notFound, "Not Found: no \(path.joined(separator: "/").prefix(100)) on buckets")))
        }
    }

    /// `POST /b/{b}/lockRetentionPolicy?ifMetagenerationMatch=M`: GCS requires the metageneration; once locked the
    /// policy can only be lengthened.
    private func lockRetentionPolicy(_ context: RequestContext, _ name: BucketName) throws -> HTTPResponse {
        try service.requireBucket(name)
        let conditions = try conditions(context)
        guard conditions.ifMetagenerationMatch != nil else {
            throw StorageError(.invalidArgument, "lockRetentionPolicy needs ifMetagenerationMatch")
        }
        let record = try service.metadata.updateBucket(name, at: context.time) { bucket in
            try Self.check(conditions, bucket, read: false)
            var resource = BucketResource(bucket)
            guard var policy = resource.fields["retentionPolicy"]?.objectValue else {
                throw StorageError(.invalidArgument, "bucket \(name) has no retention policy to lock")
            }
            policy["isLocked"] = .bool(true)
            resource.fields["retentionPolicy"] = .object(policy)
            bucket.resource = resource.json
        }
        return Reply.json(200, render(record, context))
    }

    /// `predefinedAcl` / `predefinedDefaultObjectAcl` on insert, patch and update, expanded as GCS does.
    package static func applyPredefined(_ query: QueryParameters, to resource: inout BucketResource) throws {
        if let name = query["predefinedAcl"], !name.isEmpty {
            try resource.setACL("acl", try predefinedACL(name))
        }
        if let name = query["predefinedDefaultObjectAcl"], !name.isEmpty {
            try resource.setACL("defaultObjectAcl", try ObjectResource.predefined(name, owner: nil))
        }
    }

    /// A predefined bucket ACL (`predefinedAcl`, the XML API's `x-goog-acl`), as GCS expands it.
    package static func predefinedACL(_ name: String) throws -> [ACLEntry] {
        let owners = ACLEntry(entity: "project-owners-\(ProjectACL.projectNumber)", role: "OWNER")
        switch name.lowercased() {
        case "private": return [owners]
        case "projectprivate": return ProjectACL.bucketDefault
        case "publicread": return [owners, ACLEntry(entity: "allUsers", role: "READER")]
        case "publicreadwrite": return [owners, ACLEntry(entity: "allUsers", role: "WRITER")]
        case "authenticatedread": return [owners, ACLEntry(entity: "allAuthenticatedUsers", role: "READER")]
        default: throw StorageError(.invalidArgument, "Invalid argument: predefinedAcl \(name.prefix(40))")
        }
    }

    private func conditions(_ context: RequestContext) throws -> Preconditions {
        try GCSConditions.destination(context.query)
    }

    /// Metageneration preconditions on a bucket: 412 when a `Match` fails; on a read a held `NotMatch` is 304.
    static func check(_ conditions: Preconditions, _ bucket: BucketRecord, read: Bool) throws {
        if let want = conditions.ifMetagenerationMatch, want != bucket.metageneration {
            throw StorageError(
                .preconditionFailed, "At least one of the pre-conditions you specified did not hold: \(bucket.name)")
        }
        if let avoid = conditions.ifMetagenerationNotMatch, avoid == bucket.metageneration {
            if read { throw StorageError(.notModified, "Not Modified") }
            throw StorageError(
                .preconditionFailed, "At least one of the pre-conditions you specified did not hold: \(bucket.name)")
        }
    }

    private func withBody(_ context: RequestContext, _ body: @escaping (JSONObject) throws -> HTTPResponse)
        -> RequestDisposition
    {
        GCSBody.json(service, context, body)
    }
}
