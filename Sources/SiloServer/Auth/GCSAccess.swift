import SiloCore
import SiloHTTP

/// The access decision of the GCS JSON and XML APIs: what ``GCSPermissions`` says a request needs, granted by
/// ``IAMGrants`` (bucket IAM policy, ACLs, OAuth scopes) — once per request, before its handler reads a byte of
/// the body. Admin credentials and emulator mode need nothing, as before; everyone else needs every permission.
struct GCSAccess {
    let service: ObjectService

    /// Nil when the request may go on; otherwise why not (401 for an anonymous caller, else 403).
    func refusal(_ route: Route, _ context: RequestContext) -> StorageError? {
        refusal(GCSPermissions.required(route, context), context.principal)
    }

    /// The same decision for requirements a handler finds in the body (a POST policy form's object and signer).
    func refusal(_ requirements: [AccessRequirement], _ principal: Principal?) -> StorageError? {
        if service.configuration.openAdminAPI || principal?.isAdmin == true { return nil }
        var resources: [BucketName: BucketResource?] = [:]
        for requirement in requirements {
            switch requirement {
            case .none, .inBody:
                continue
            case .administrator:
                return Self.denial(principal, "admin access", to: "this resource")
            case .permission(let permission, let bucket, let name):
                let resource: BucketResource?
                if let cached = resources[bucket] {
                    resource = cached
                } else {
                    resource = try? service.bucketResource(bucket)
                    resources[bucket] = resource
                }
                if let denied = refusal(permission, bucket, name, resource, principal) { return denied }
                if permission == .objectsCreate, let name,
                    (try? service.metadata.object(bucket, name, generation: nil)) != nil,
                    let denied = refusal(.objectsDelete, bucket, name, resource, principal)
                {
                    // Replacing a live object deletes it: GCS asks for both.
                    return denied
                }
            }
        }
        return nil
    }

    /// Whether `principal` holds `permission` on `bucket` (and on `name` when given, whose ACL then counts too).
    func holds(
        _ permission: GCSPermission, _ bucket: BucketName, _ name: ObjectName?, _ principal: Principal?
    ) -> Bool {
        refusal(permission, bucket, name, try? service.bucketResource(bucket), principal) == nil
    }

    private func refusal(
        _ permission: GCSPermission, _ bucket: BucketName, _ name: ObjectName?, _ resource: BucketResource?,
        _ principal: Principal?
    ) -> StorageError? {
        let target = name.map { "\(bucket)/\($0)" } ?? bucket.rawValue
        let denied = Self.denial(principal, "\(permission.rawValue) access", to: target)
        // A bucket that does not exist grants nothing, and says nothing about whether it exists.
        guard !permission.isProjectLevel, let resource, IAMGrants.scopeAllows(permission, principal) else {
            return denied
        }
        let grants = IAMGrants(resource: resource, principal: principal)
        if grants.onBucket.contains(permission) { return nil }
        if let name, IAMGrants.objectACLRoles.values.contains(where: { $0.contains(permission) }),
            let record = try? service.metadata.object(bucket, name, generation: nil),
            grants.onObject(record).contains(permission)
        {
            return nil
        }
        return denied
    }

    /// "<who> does not have <permission> access to <resource>.", as GCS words its denials.
    static func denial(_ principal: Principal?, _ what: String, to target: String) -> StorageError {
        let who = principal == nil ? "Anonymous caller" : principal?.serviceAccount?.email ?? "The caller"
        return StorageError(
            principal == nil ? .unauthenticated : .permissionDenied, "\(who) does not have \(what) to \(target).",
            cause: AccessDenial())
    }
}

/// Marks a refusal by IAM or ACL, which the XML API answers as `AccessDenied` with the message as `<Details>`.
struct AccessDenial: Error, Sendable {}
