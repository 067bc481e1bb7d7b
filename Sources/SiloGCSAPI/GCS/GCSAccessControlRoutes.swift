import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// Which ACL a request names: a bucket's own, its default for new objects, or an object's.
enum ACLTarget {
    case bucket, defaultObject
    case object(ObjectName)

    var kind: String {
        switch self {
        case .bucket: "storage#bucketAccessControl"
        case .defaultObject, .object: "storage#objectAccessControl"
        }
    }

    var bucketRoles: Bool {
        if case .bucket = self { return true }
        return false
    }
}

/// bucketAccessControls, defaultObjectAccessControls and objectAccessControls (list, get, insert, patch, update,
/// delete), kept in the bucket resource (`acl`, `defaultObjectAcl`) and in the object's extras. Every change is a
/// metadata write (metageneration bumps, preconditions checked in the store). With uniform bucket-level access on,
/// GCS refuses the legacy ACL calls with 400, and so does Silo.
struct GCSAccessControlRoutes {
    let service: ObjectService

    package func handle(_ context: RequestContext, _ bucket: BucketName, _ target: ACLTarget, entity: String?)
        -> RequestDisposition
    {
        switch (context.method, entity) {
        case ("GET", _), ("HEAD", _), ("DELETE", .some):
            return .respond(run { try apply(context, bucket, target, entity: entity, body: nil) })
        case ("POST", nil), ("PATCH", .some), ("PUT", .some):
            return GCSBody.json(service, context) { body in
                try apply(context, bucket, target, entity: entity, body: body)
            }
        default:
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on an ACL")))
        }
    }

    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    private func apply(
        _ context: RequestContext, _ bucket: BucketName, _ target: ACLTarget, entity: String?, body: JSONObject?
    ) throws -> HTTPResponse {
        let read = context.method == "GET" || context.method == "HEAD"
        var result: [ACLEntry] = []
        var named: Int64?
        var generation: Int64?
        if case .object(let name) = target {
            named = try GCSConditions.generation(context.query)
            generation = context.addressed(bucket, name, named: named)
        }
        let record: ObjectRecord?
        do {
            record = try access(
                bucket, target, generation: generation,
                conditions: try GCSConditions.destination(context.query), write: !read, time: context.time
            ) { entries, _ in
                result = try Self.edit(&entries, method: context.method, entity: entity, body: body, target: target)
            }.record
        } catch {
            guard case .object(let name) = target else { throw error }
            throw context.changed(bucket, name, named: named, error)
        }
        let render: (ACLEntry) -> JSONValue =
            record.map { record in { ObjectResource.aclJSON($0, record: record) } }
            ?? { ProjectACL.bucketJSON($0, bucket: bucket, kind: target.kind) }
        switch (context.method, entity) {
        case ("DELETE", _): return Reply.empty(204)
        case ("GET", nil), ("HEAD", nil):
            let kind = target.kind + "s"
            return Reply.json(200, .object(["kind": .string(kind), "items": .array(result.map(render))]))
        default:
            guard let entry = result.first else { throw StorageError(.notFound, "No such ACL entry") }
            return Reply.json(200, render(entry))
        }
    }

    /// Runs `edit` on the ACL `target` names (the stored one, else the default GCS shows; with the object's owner
    /// entity, nil for a bucket's ACLs) and, when `write`, stores what it leaves: one metadata write, `conditions` checked in the store's transaction (the metageneration
    /// bumps). Both APIs' ACL calls come here, so the rules are one: none with uniform bucket-level access, no
    /// `allUsers` or `allAuthenticatedUsers` under enforced public access prevention. Returns the entries after
    /// `edit` and, for an object, its record.
    package func access(
        _ bucket: BucketName, _ target: ACLTarget, generation: Int64?, conditions: Preconditions, write: Bool,
        time: Timestamp, edit: (inout [ACLEntry], _ owner: String?) throws -> Void
    ) throws -> (entries: [ACLEntry], record: ObjectRecord?) {
        guard let resource = try service.bucketResource(bucket) else { throw StorageError.noSuchBucket(bucket) }
        if resource.uniformBucketLevelAccess {
            throw StorageError(
                .invalidArgument,
                "Cannot use the ACL API while uniform bucket-level access is enabled on bucket \(bucket). Read more "
                    + "at https://cloud.google.com/storage/docs/uniform-bucket-level-access")
        }
        var result: [ACLEntry] = []
        func change(_ entries: inout [ACLEntry], _ owner: String?) throws {
            try edit(&entries, owner)
            if write, resource.publicAccessPreventionEnforced,
                entries.contains(where: { $0.entity == "allUsers" || $0.entity == "allAuthenticatedUsers" })
            {
                throw BucketResource.publicAccessPrevented
            }
            result = entries
        }
        switch target {
        case .bucket, .defaultObject:
            let key = target.bucketRoles ? "acl" : "defaultObjectAcl"
            let current = { (resource: BucketResource) in
                ProjectACL.entries(resource.fields[key])
                    ?? (target.bucketRoles ? ProjectACL.bucketDefault : ProjectACL.defaultACL(nil, owner: nil))
            }
            if write {
                _ = try service.metadata.updateBucket(bucket, at: time) { record in
                    try GCSBucketRoutes.check(conditions, record, read: false)
                    var updated = BucketResource(record)
                    var entries = current(updated)
                    try change(&entries, nil)
                    updated.fields[key] = .array(entries.map(ProjectACL.storedJSON))
                    record.resource = updated.json
                }
            } else {
                try GCSBucketRoutes.check(conditions, try service.metadata.bucket(bucket).orThrow(bucket), read: true)
                var entries = current(resource)
                try change(&entries, nil)
            }
            return (result, nil)
        case .object(let name):
            if write {
                let record = try service.metadata.updateObject(
                    bucket, name, generation: generation, conditions: conditions, at: time
                ) { fields in
                    var entries =
                        ACLEntry.parse(fields.extras.acl)
                        ?? ProjectACL.defaultACL(resource, owner: fields.extras.owner)
                    try change(&entries, fields.extras.owner)
                    fields.extras.acl = ACLEntry.json(entries)
                }
                return (result, record)
            }
            guard let found = try service.object(bucket, name, generation: generation) else {
                throw StorageError.objectNotFound(bucket, name)
            }
            try GCSConditions.checkRead(conditions, found)
            var entries =
                ACLEntry.parse(found.fields.extras.acl)
                ?? ProjectACL.defaultACL(resource, owner: found.fields.extras.owner)
            try change(&entries, found.fields.extras.owner)
            return (result, found)
        }
    }

    /// Runs one ACL call on `entries`; returns what the answer shows (the list, or the one entry touched).
    static func edit(
        _ entries: inout [ACLEntry], method: String, entity: String?, body: JSONObject?, target: ACLTarget
    ) throws -> [ACLEntry] {
        func missing(_ e: String) -> StorageError {
            StorageError(.notFound, "No such ACL entry: \(e.prefix(100))")
        }
        switch (method, entity) {
        case ("GET", nil), ("HEAD", nil): return entries
        case ("GET", .some(let e)), ("HEAD", .some(let e)):
            guard let found = entries.first(where: { $0.entity == e }) else { throw missing(e) }
            return [found]
        case ("DELETE", .some(let e)):
            guard entries.contains(where: { $0.entity == e }) else { throw missing(e) }
            entries.removeAll { $0.entity == e }
            return []
        case ("POST", nil):
            let entry = try ACLEntry(json: .object(body ?? JSONObject()), bucket: target.bucketRoles)
            entries.removeAll { $0.entity == entry.entity }
            entries.append(entry)
            return [entry]
        case (_, .some(let e)):
            guard let role = body?["role"]?.stringValue else {
                throw StorageError(.invalidArgument, "Invalid argument: an ACL entry needs a role")
            }
            let entry = try ACLEntry(entity: e, role: role, bucket: target.bucketRoles)
            guard let index = entries.firstIndex(where: { $0.entity == e }) else {
                if method == "PUT" {
                    entries.append(entry)
                    return [entry]
                }
                throw missing(e)
            }
            entries[index] = entry
            return [entry]
        default:
            throw StorageError(.invalidArgument, "\(method) is not supported on an ACL")
        }
    }

}

extension Optional where Wrapped == BucketRecord {
    fileprivate func orThrow(_ name: BucketName) throws -> BucketRecord {
        guard let self else { throw StorageError.noSuchBucket(name) }
        return self
    }
}

/// A GCS request's JSON body (empty means `{}`), read within the server's JSON limit; errors in GCS's shape.
enum GCSBody {
    package static func json(
        _ service: ObjectService, _ context: RequestContext, _ handler: @escaping (JSONObject) throws -> HTTPResponse
    ) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { bytes in
                do {
                    guard case .object(let json) = try JSONValue.parse(bytes.isEmpty ? Array("{}".utf8) : bytes)
                    else { throw StorageError(.invalidArgument, "the body must be a JSON object") }
                    return try handler(json)
                } catch {
                    return Reply.gcsError(error)
                }
            })
    }
}
