import SiloCore
import SiloHTTP
import SiloWire

/// GCS JSON API bucket operations: list, insert, get, patch, update, delete, lockRetentionPolicy — the whole
/// bucket resource (``BucketResource``), with `ifMetagenerationMatch` / `NotMatch` on get, patch, update, delete.
struct GCSBucketRoutes {
    let service: ObjectService

    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    func render(_ record: BucketRecord, _ context: RequestContext) -> JSONValue {
        GCSJSON.bucket(
            record, base: context.externalBase,
            extra: BucketResource(record).rendered(full: context.query["projection"] == "full", name: record.name))
    }

    func buckets(_ context: RequestContext) -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD":
            return .respond(
                run {
                    var records = try service.metadata.buckets()
                    if let served = service.configuration.buckets {
                        records = records.filter { served.contains($0.name) }
                    }
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
                let bucket = try BucketName(name)
                try service.checkServed(bucket)
                let enable = context.query["enableObjectRetention"]?.lowercased() == "true"
                let resource = try BucketResource.inserted(json, enableObjectRetention: enable, now: context.time)
                let record = try service.metadata.createBucket(
                    BucketRecord(
                        name: bucket, timeCreated: context.time, updated: context.time,
                        versioning: resource.versioning, resource: resource.json))
                return Reply.json(200, render(record, context))
            }
        default:
            return .respond(Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on /b")))
        }
    }

    func bucket(_ context: RequestContext, _ name: BucketName) -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD":
            return .respond(
                run {
                    try service.checkServed(name)
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
                try service.requireBucket(name)
                let conditions = try conditions(context)
                let record = try service.metadata.updateBucket(name, at: context.time) { bucket in
                    try Self.check(conditions, bucket, read: false)
                    var resource = BucketResource(bucket)
                    try resource.update(json, replacing: context.method == "PUT", now: context.time)
                    bucket.versioning = resource.versioning
                    bucket.resource = resource.json
                }
                return Reply.json(200, render(record, context))
            }
        case "DELETE":
            return .respond(
                run {
                    try service.checkServed(name)
                    let conditions = try conditions(context)
                    try service.metadata.deleteBucket(name) { try Self.check(conditions, $0, read: false) }
                    return Reply.empty(204)
                })
        default:
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on a bucket")))
        }
    }

    /// `/b/{bucket}/…` other than objects.
    func sub(_ context: RequestContext, _ name: BucketName, _ path: [String]) -> RequestDisposition {
        switch (context.method, path) {
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
