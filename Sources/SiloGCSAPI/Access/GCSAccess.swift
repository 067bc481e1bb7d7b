package import SiloCore
import SiloHTTP
package import SiloServerKit

/// The access decision of the GCS JSON and XML APIs: what ``GCSPermissions`` says a request needs, granted by
/// ``IAMGrants`` (bucket IAM policy, ACLs, OAuth scopes) — once per request, before its handler reads a byte of
/// the body — and again, for a write, when it commits (``ObjectService/gcsPinned(_:_:conditions:principal:write:)``).
/// Admin credentials and emulator mode need nothing, as before; everyone else needs every permission.
///
/// An object ACL grants on the version the request addresses (``ObjectVersion``), read from the store for that
/// generation — never another generation's ACL: every generation has its own, as in GCS.
package struct GCSAccess {
    let service: ObjectService
    /// `request.time` for IAM Conditions: when the decision is made (the request's arrival for the decision before
    /// its body, the commit's moment for the decision again at commit).
    var time = Timestamp.now()

    package init(service: ObjectService) {
        self.service = service
    }

    /// What the decision about one request found: why not (401 for an anonymous caller, else 403), or the live
    /// versions it granted on by their own ACL alone — the handler must serve or change those versions and no later
    /// one (``RequestContext/addressed(_:_:named:)``).
    package struct Decision {
        package var refusal: StorageError?
        package var decided: [DecidedVersion] = []
    }

    /// The decision about a request, before its handler runs.
    package func decide(_ route: GCSRoute, _ context: RequestContext) -> Decision {
        var access = self
        access.time = context.time
        return access.decideAtTime(route, context)
    }

    private func decideAtTime(_ route: GCSRoute, _ context: RequestContext) -> Decision {
        var decided: [DecidedVersion] = []
        let refusal = refusal(GCSPermissions.required(route, context), context.principal, decided: &decided)
        return Decision(refusal: refusal, decided: decided)
    }

    /// Whether `principal` needs no permission at all: the admin, or anyone in emulator mode.
    package func exempts(_ principal: Principal?) -> Bool {
        service.configuration.openAdminAPI || principal?.isAdmin == true
    }

    /// The same decision for requirements a handler finds in the body (a POST policy form's object and signer).
    package func refusal(_ requirements: [AccessRequirement], _ principal: Principal?) -> StorageError? {
        var decided: [DecidedVersion] = []
        return refusal(requirements, principal, decided: &decided)
    }

    private func refusal(
        _ requirements: [AccessRequirement], _ principal: Principal?, decided: inout [DecidedVersion]
    ) -> StorageError? {
        if exempts(principal) { return nil }
        var resources: [BucketName: BucketResource?] = [:]
        for requirement in requirements {
            switch requirement {
            case .none, .inBody:
                continue
            case .administrator:
                return Self.denial(principal, "admin access", to: "this resource")
            case .permission(let permission, let bucket, let name, let version):
                let resource: BucketResource?
                if let cached = resources[bucket] {
                    resource = cached
                } else {
                    do { resource = try service.bucketResource(bucket) } catch { return StorageError.wrap(error) }
                    resources[bucket] = resource
                }
                let target = name.map { Target.object($0, version) } ?? .bucket
                switch grant(permission, bucket, target, resource, principal) {
                case .failure(let denied): return denied
                case .success(let record?) where version == .live:
                    // Granted by the live version's own ACL: that version, not whichever is live later.
                    decided.append(DecidedVersion(bucket: bucket, name: record.name, generation: record.generation))
                case .success: break
                }
                if permission == .objectsCreate, let name {
                    // Before the first byte: a write that would replace a live object needs `objects.delete` too.
                    // Decided again when the write commits, against the version it then replaces.
                    let live: ObjectRecord?
                    do { live = try service.object(bucket, name, generation: nil) } catch {
                        return StorageError.wrap(error)
                    }
                    if let denied = writeRefusal(bucket, name, replacing: live, resource, principal) { return denied }
                }
            }
        }
        return nil
    }

    /// Whether `principal` may write `name`, replacing `existing` (the live version, nil when there is none):
    /// `objects.create`, and `objects.delete` as well when there is a version to replace — GCS asks for both.
    package func writeRefusal(
        _ bucket: BucketName, _ name: ObjectName, replacing existing: ObjectRecord?, _ principal: Principal?
    )
        -> StorageError?
    {
        if exempts(principal) { return nil }
        let resource: BucketResource?
        do { resource = try service.bucketResource(bucket) } catch { return StorageError.wrap(error) }
        if let denied = refusal(.objectsCreate, bucket, .object(name, .live), resource, principal) { return denied }
        return writeRefusal(bucket, name, replacing: existing, resource, principal)
    }

    private func writeRefusal(
        _ bucket: BucketName, _ name: ObjectName, replacing existing: ObjectRecord?, _ resource: BucketResource?,
        _ principal: Principal?
    ) -> StorageError? {
        guard let existing else { return nil }
        return refusal(.objectsDelete, bucket, .record(existing), resource, principal)
    }

    /// Whether `principal` holds `permission` on `bucket` alone (no object's ACL counts).
    package func holds(_ permission: GCSPermission, _ bucket: BucketName, _ principal: Principal?) -> Bool {
        guard !exempts(principal) else { return true }
        return refusal(permission, bucket, .bucket, try? service.bucketResource(bucket), principal) == nil
    }

    /// Nil when `principal` holds `permission` on the version `record` is — a listed item, a compose source, an
    /// object about to be shown with its ACL — by the bucket's grants or that version's own ACL.
    package func refusal(
        _ permission: GCSPermission, on record: ObjectRecord, _ principal: Principal?, bucket: BucketResource?
    )
        -> StorageError?
    {
        if exempts(principal) { return nil }
        return refusal(permission, record.bucket, .record(record), bucket, principal)
    }

    /// Throws unless `principal` holds `permission` on `name` as the handler read it (`record`, the version the
    /// request names; nil when there is none, and then only the bucket's grants count).
    package func check(
        _ permission: GCSPermission, _ bucket: BucketName, _ name: ObjectName, _ record: ObjectRecord?,
        _ principal: Principal?, bucket resource: BucketResource?
    ) throws {
        if exempts(principal) { return }
        let target = record.map(Target.record) ?? .object(name, .unreadable)
        if let refusal = refusal(permission, bucket, target, resource, principal) { throw refusal }
    }

    /// Throws unless `principal` may set the ACL of the version whose fields are `fields` (the one a metadata write
    /// is changing, read in its transaction): `objects.setIamPolicy` by the bucket's grants or that version's ACL.
    package func checkACLChange(
        _ bucket: BucketName, _ name: ObjectName, _ fields: ObjectFields, _ principal: Principal?,
        bucket resource: BucketResource?
    ) throws {
        if exempts(principal) { return }
        // Only the fields take part in the decision (the ACL and the owner in them).
        let version = ObjectRecord(
            bucket: bucket, name: name, generation: 0, metageneration: 0,
            blob: BlobSummary(size: 0, md5: [], crc32c: 0),
            blobID: .random(), fields: fields, timeCreated: Timestamp(microseconds: 0),
            updated: Timestamp(microseconds: 0), componentCount: nil)
        if let refusal = refusal(.objectsSetIamPolicy, bucket, .record(version), resource, principal) { throw refusal }
    }

    /// What a permission is asked of: the bucket, one version of an object by its address, or a version already read.
    private enum Target {
        case bucket
        case object(ObjectName, ObjectVersion)
        case record(ObjectRecord)

        var name: ObjectName? {
            switch self {
            case .bucket: nil
            case .object(let name, _): name
            case .record(let record): record.name
            }
        }
    }

    private func refusal(
        _ permission: GCSPermission, _ bucket: BucketName, _ target: Target, _ resource: BucketResource?,
        _ principal: Principal?
    ) -> StorageError? {
        if case .failure(let denied) = grant(permission, bucket, target, resource, principal) { return denied }
        return nil
    }

    /// Whether `permission` is granted on `target`: by the bucket (success with nil: every version), by the version's
    /// own ACL (success with that version), or not (why).
    private func grant(
        _ permission: GCSPermission, _ bucket: BucketName, _ target: Target, _ resource: BucketResource?,
        _ principal: Principal?
    ) -> Result<ObjectRecord?, StorageError> {
        let denied = Self.denial(
            principal, "\(permission.rawValue) access", to: target.name.map { "\(bucket)/\($0)" } ?? bucket.rawValue)
        // A bucket that does not exist grants nothing, and says nothing about whether it exists.
        guard !permission.isProjectLevel, let resource, IAMGrants.scopeAllows(permission, principal) else {
            return .failure(denied)
        }
        let grants = IAMGrants(
            resource: resource, principal: principal,
            attributes: IAMCondition.Attributes(time: time, bucket: bucket, object: target.name))
        if grants.onBucket.contains(permission) { return .success(nil) }
        guard IAMGrants.objectACLRoles.values.contains(where: { $0.contains(permission) }) else {
            return .failure(denied)
        }
        let record: ObjectRecord?
        switch target {
        case .bucket: return .failure(denied)
        case .record(let known): record = known
        case .object(let name, let version):
            do { record = try self.record(bucket, name, version) } catch { return .failure(StorageError.wrap(error)) }
        }
        guard let record, grants.onObject(record).contains(permission) else { return .failure(denied) }
        return .success(record)
    }

    /// The version `version` addresses, with its own ACL; nil when there is none.
    private func record(_ bucket: BucketName, _ name: ObjectName, _ version: ObjectVersion) throws -> ObjectRecord? {
        switch version {
        case .live: try service.object(bucket, name, generation: nil)
        case .generation(let generation): try service.object(bucket, name, generation: generation)
        case .softDeleted(let generation):
            try service.metadata.softDeletedObject(bucket, name, generation: generation)?.record
        case .unreadable: nil
        }
    }

    /// "<who> does not have <permission> access to <resource>.", as GCS words its denials.
    package static func denial(_ principal: Principal?, _ what: String, to target: String) -> StorageError {
        let who = principal == nil ? "Anonymous caller" : principal?.serviceAccount?.email ?? "The caller"
        return StorageError(
            principal == nil ? .unauthenticated : .permissionDenied, "\(who) does not have \(what) to \(target).",
            cause: AccessDenial())
    }
}
