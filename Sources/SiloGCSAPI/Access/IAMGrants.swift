import SiloAuth
import SiloCore
import SiloServerKit
import SiloWire

/// What a bucket's IAM policy and its ACLs grant one caller, evaluated as GCS evaluates them:
///
/// - IAM: every unconditional binding whose members name the caller (`serviceAccount:EMAIL`, `user:EMAIL`,
///   `allAuthenticatedUsers` for any verified caller, `allUsers` for anyone) gives its role's permissions; a
///   conditional binding gives them only where its condition (``IAMCondition``) holds for the decision's time and
///   resource. The project-convenience members
///   (`projectOwner:`, `projectEditor:`, `projectViewer:`) match no caller: Silo has no project IAM.
/// - ACLs, only while uniform bucket-level access is off: a bucket ACL entry naming the caller (`user-EMAIL`,
///   `allAuthenticatedUsers`, `allUsers`) gives READER, WRITER or OWNER on the bucket; an object's ACL gives
///   READER or OWNER on that object.
/// - Enforced public access prevention makes `allUsers` and `allAuthenticatedUsers` grant nothing.
package struct IAMGrants {
    let resource: BucketResource
    let principal: Principal?
    /// What conditional bindings are evaluated against; nil: they grant nothing.
    var attributes: IAMCondition.Attributes? = nil

    /// The predefined Cloud Storage roles.
    static let roles: [String: Set<GCSPermission>] = {
        let all = Set(GCSPermission.allCases)
        let objects: Set<GCSPermission> = [
            .objectsCreate, .objectsDelete, .objectsGet, .objectsList, .objectsUpdate, .objectsRestore,
            .objectsGetIamPolicy, .objectsSetIamPolicy,
        ]
        let multipart: Set<GCSPermission> = [
            .multipartUploadsCreate, .multipartUploadsAbort, .multipartUploadsList, .multipartUploadsListParts,
        ]
        let folders: Set<GCSPermission> = [
            .managedFoldersCreate, .managedFoldersDelete, .managedFoldersGet, .managedFoldersList,
        ]
        return [
            "roles/storage.admin": all,
            "roles/storage.objectAdmin": objects.union(multipart).union(folders),
            "roles/storage.objectUser": objects.subtracting([.objectsGetIamPolicy, .objectsSetIamPolicy])
                .union(multipart).union(folders),
            "roles/storage.objectCreator": [
                .objectsCreate, .multipartUploadsCreate, .multipartUploadsAbort, .multipartUploadsListParts,
                .managedFoldersCreate,
            ],
            "roles/storage.objectViewer": [.objectsGet, .objectsList, .managedFoldersGet, .managedFoldersList],
            "roles/storage.bucketViewer": [.bucketsGet],
            "roles/storage.legacyBucketOwner": multipart.union([
                .bucketsGet, .bucketsUpdate, .bucketsGetIamPolicy, .bucketsSetIamPolicy, .objectsCreate, .objectsDelete,
                .objectsList,
            ]),
            "roles/storage.legacyBucketWriter": multipart.union([
                .bucketsGet, .objectsCreate, .objectsDelete, .objectsList,
            ]),
            "roles/storage.legacyBucketReader": [.bucketsGet, .objectsList, .multipartUploadsList],
            "roles/storage.legacyObjectOwner": [
                .objectsGet, .objectsUpdate, .objectsGetIamPolicy, .objectsSetIamPolicy,
            ],
            "roles/storage.legacyObjectReader": [.objectsGet],
        ]
    }()

    /// What the bucket ACL roles give.
    static let bucketACLRoles: [String: Set<GCSPermission>] = [
        "READER": [.bucketsGet, .objectsList],
        "WRITER": [.bucketsGet, .objectsList, .objectsCreate, .objectsDelete],
        "OWNER": [
            .bucketsGet, .objectsList, .objectsCreate, .objectsDelete, .bucketsUpdate, .bucketsGetIamPolicy,
            .bucketsSetIamPolicy,
        ],
    ]

    /// What the object ACL roles give on their object.
    static let objectACLRoles: [String: Set<GCSPermission>] = [
        "READER": [.objectsGet],
        "OWNER": [.objectsGet, .objectsUpdate, .objectsGetIamPolicy, .objectsSetIamPolicy],
    ]

    private var email: String? { principal?.serviceAccount?.email.lowercased() }
    private var verified: Bool { principal?.verified == true }
    private var publicClosed: Bool { resource.publicAccessPreventionEnforced }

    /// Whether an IAM member names the caller.
    func names(member: String) -> Bool {
        switch member {
        case "allUsers": return !publicClosed
        case "allAuthenticatedUsers": return !publicClosed && verified
        default:
            guard let email, let colon = member.firstIndex(of: ":") else { return false }
            let kind = member[..<colon]
            return (kind == "serviceAccount" || kind == "user")
                && member[member.index(after: colon)...].lowercased() == email
        }
    }

    /// Whether an ACL entity names the caller.
    func names(entity: String) -> Bool {
        switch entity {
        case "allUsers": return !publicClosed
        case "allAuthenticatedUsers": return !publicClosed && verified
        default:
            guard let email, entity.hasPrefix("user-") else { return false }
            return entity.dropFirst(5).lowercased() == email
        }
    }

    /// What the bucket's IAM policy and (uniform access off) its ACL give the caller on the bucket and every object
    /// — conditional bindings only on the resource and at the time of ``attributes``.
    var onBucket: Set<GCSPermission> {
        var granted: Set<GCSPermission> = []
        for binding in BucketIAM.policy(resource).bindings {
            guard let o = binding.objectValue, let role = o["role"]?.stringValue,
                let permissions = Self.roles[role],
                (o["members"]?.arrayValue ?? []).contains(where: { $0.stringValue.map(names(member:)) == true })
            else { continue }
            if let condition = o["condition"] {
                // A stored expression was parsed when it was set; one that no longer parses grants nothing.
                guard let attributes, let expression = condition.objectValue?["expression"]?.stringValue,
                    let parsed = try? IAMCondition(expression), parsed.holds(attributes)
                else { continue }
            }
            granted.formUnion(permissions)
        }
        if !resource.uniformBucketLevelAccess {
            for entry in ProjectACL.entries(resource.fields["acl"]) ?? [] where names(entity: entry.entity) {
                granted.formUnion(Self.bucketACLRoles[entry.role.uppercased()] ?? [])
            }
        }
        return granted
    }

    /// What an object's own ACL adds (nothing with uniform access on).
    func onObject(_ record: ObjectRecord) -> Set<GCSPermission> {
        guard !resource.uniformBucketLevelAccess else { return [] }
        let acl =
            ACLEntry.parse(record.fields.extras.acl)
            ?? ProjectACL.defaultACL(resource, owner: record.fields.extras.owner)
        var granted: Set<GCSPermission> = []
        for entry in acl where names(entity: entry.entity) {
            granted.formUnion(Self.objectACLRoles[entry.role.uppercased()] ?? [])
        }
        return granted
    }

    /// What the caller's OAuth scopes leave of `permission` (a signed URL or policy has no scopes and no cap).
    static func scopeAllows(_ permission: GCSPermission, _ principal: Principal?) -> Bool {
        guard let caller = principal?.serviceAccount,
            caller.credential == .accessToken || caller.credential == .selfSignedJWT
        else { return true }
        switch StorageScope.ceiling(of: caller.scopes) {
        case .fullControl: return true
        case .readWrite: return !permission.changesAccess
        case .readOnly: return permission.isRead
        case nil: return false
        }
    }
}
