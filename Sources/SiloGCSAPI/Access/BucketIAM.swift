package import SiloCore
package import SiloHTTP
package import SiloServerKit
package import SiloWire

/// A bucket's IAM policy (`GET`/`PUT /b/{b}/iam`, `GET /b/{b}/iam/testPermissions`), kept in the bucket resource
/// under ``BucketResource/iamPolicyKey``. Checked as GCS checks it: conditional bindings need uniform bucket-level
/// access (412) and policy version 3 (400), and so does replacing a policy that has them; reading a policy with
/// conditions needs `optionsRequestedPolicyVersion=3` (400), so that a client unaware of conditions cannot read and
/// write back a policy without them; public access prevention refuses `allUsers` and `allAuthenticatedUsers`
/// (412). A bucket that never had one set shows GCS's legacy default bindings. Conditions are evaluated by
/// ``IAMGrants`` (``IAMCondition``).
package struct BucketIAM {
    let service: ObjectService

    package init(service: ObjectService) {
        self.service = service
    }

    static let maxBindings = 100
    static let maxMembers = 1_500

    /// The policy versions IAM knows; only 3 can carry conditions.
    static let versions: Set<Int64> = [0, 1, 3]

    package func get(_ context: RequestContext, _ name: BucketName) throws -> HTTPResponse {
        var requested: Int64 = 1
        if let text = context.query["optionsRequestedPolicyVersion"] {
            guard let version = Int64(text), Self.versions.contains(version) else {
                throw StorageError(
                    .invalidArgument, "Invalid argument: optionsRequestedPolicyVersion must be 0, 1 or 3")
            }
            requested = version
        }
        guard let record = try service.metadata.bucket(name) else { throw StorageError.noSuchBucket(name) }
        let policy = Self.policy(BucketResource(record))
        if requested < 3, policy.bindings.contains(where: Self.isConditional) {
            throw StorageError(
                .invalidArgument,
                "The IAM policy of bucket \(name) has conditions: read it with optionsRequestedPolicyVersion=3")
        }
        return Reply.json(200, Self.rendered(policy, name, record))
    }

    package func set(_ context: RequestContext, _ name: BucketName, _ body: JSONObject) throws -> HTTPResponse {
        let bindings = try Self.validated(body["bindings"])
        let version: Int64
        switch body["version"] {
        case nil, .null?: version = 1
        case let value?:
            guard let number = value.int64Value, Self.versions.contains(number) else {
                throw StorageError(.invalidArgument, "Invalid argument: an IAM policy's version must be 0, 1 or 3")
            }
            version = number
        }
        let record = try service.metadata.updateBucket(name, at: context.time) { record in
            let resource = BucketResource(record)
            if bindings.contains(where: Self.isConditional) {
                guard resource.uniformBucketLevelAccess else {
                    throw StorageError(
                        .preconditionFailed,
                        "IAM policies with conditions on bucket \(name) require you to enable uniform bucket-level "
                            + "access first")
                }
            }
            // Writing conditions, or over a policy that has them, must say version 3: a version-1 client would
            // otherwise drop conditions it never saw.
            if version != 3,
                bindings.contains(where: Self.isConditional)
                    || Self.policy(resource).bindings.contains(where: Self.isConditional)
            {
                throw StorageError(
                    .invalidArgument,
                    "IAM policies with conditions must have version at least 3 (bucket \(name)): set version to 3")
            }
            if resource.publicAccessPreventionEnforced, bindings.contains(where: Self.isPublic) {
                throw StorageError(
                    .preconditionFailed,
                    "Public access prevention is enforced on bucket \(name): allUsers and allAuthenticatedUsers "
                        + "cannot be granted")
            }
            var updated = resource
            updated.fields[BucketResource.iamPolicyKey] = .object([
                "version": .number(String(version)), "bindings": .array(bindings),
            ])
            record.resource = updated.json
        }
        return Reply.json(200, Self.rendered(Self.policy(BucketResource(record)), name, record))
    }

    /// The asked permissions the caller holds on the bucket: every `storage.*` one for the admin and in emulator
    /// mode, otherwise what the bucket's IAM policy and ACL grant it (``GCSAccess``, the table every request is
    /// checked against).
    package func test(_ context: RequestContext, _ name: BucketName) throws -> HTTPResponse {
        guard try service.metadata.bucket(name) != nil else { throw StorageError.noSuchBucket(name) }
        let asked = context.query.items.filter { $0.name == "permissions" }.map(\.value)
        guard asked.count <= 100 else {
            throw StorageError(.invalidArgument, "Invalid argument: at most 100 permissions per test")
        }
        let everything = service.configuration.openAdminAPI || context.principal?.isAdmin == true
        let access = GCSAccess(service: service)
        let held = asked.filter { asked in
            guard asked.hasPrefix("storage."), asked.utf8.count <= 100, FieldText.isValid(asked) else { return false }
            if everything { return true }
            return GCSPermission(rawValue: asked).map { access.holds($0, name, context.principal) } ?? false
        }
        var o: JSONObject = ["kind": .string("storage#testIamPermissionsResponse")]
        if !held.isEmpty { o["permissions"] = .array(held.map { .string($0) }) }
        return Reply.json(200, .object(o))
    }

    /// The stored policy or GCS's default, as `(version, bindings)`.
    package static func policy(_ resource: BucketResource) -> (version: Int64, bindings: [JSONValue]) {
        if let stored = resource.fields[BucketResource.iamPolicyKey]?.objectValue {
            return (stored["version"]?.int64Value ?? 1, stored["bindings"]?.arrayValue ?? [])
        }
        let project = ProjectACL.projectNumber
        return (
            1,
            [
                .object([
                    "role": .string("roles/storage.legacyBucketOwner"),
                    "members": .array([.string("projectEditor:\(project)"), .string("projectOwner:\(project)")]),
                ]),
                .object([
                    "role": .string("roles/storage.legacyBucketReader"),
                    "members": .array([.string("projectViewer:\(project)")]),
                ]),
            ]
        )
    }

    /// As GCS shows a policy: version 3 when it has conditions, else 1, whatever version it was set with.
    static func rendered(_ policy: (version: Int64, bindings: [JSONValue]), _ name: BucketName, _ record: BucketRecord)
        -> JSONValue
    {
        let version = policy.bindings.contains(where: isConditional) ? 3 : 1
        return .object([
            "kind": .string("storage#policy"), "resourceId": .string("projects/_/buckets/\(name.rawValue)"),
            "version": .number(String(version)), "bindings": .array(policy.bindings),
            "etag": .string(Base64.encode(Array("iam/\(record.metageneration)".utf8))),
        ])
    }

    static func isConditional(_ binding: JSONValue) -> Bool {
        binding.objectValue?["condition"] != nil
    }

    private static func isPublic(_ binding: JSONValue) -> Bool {
        (binding.objectValue?["members"]?.arrayValue ?? []).contains {
            $0 == .string("allUsers") || $0 == .string("allAuthenticatedUsers")
        }
    }

    /// Bindings as GCS accepts them: a `roles/…` role, a non-empty list of member strings, an optional condition
    /// with an expression. Kept as sent otherwise.
    private static func validated(_ json: JSONValue?) throws -> [JSONValue] {
        func bad(_ what: String) -> StorageError { StorageError(.invalidArgument, "Invalid argument: \(what)") }
        guard let json, json != .null else { return [] }
        guard let bindings = json.arrayValue, bindings.count <= maxBindings else {
            throw bad("bindings must be a list of at most \(maxBindings)")
        }
        var members = 0
        for binding in bindings {
            guard let o = binding.objectValue, let role = o["role"]?.stringValue, role.hasPrefix("roles/"),
                FieldText.isValid(role), role.utf8.count <= 200
            else { throw bad("each binding needs a role named roles/…") }
            guard let list = o["members"]?.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                throw bad("binding \(role) needs a list of members")
            }
            members += list.count
            for key in o.members.map(\.key) where !["role", "members", "condition"].contains(key) {
                throw bad("unknown field '\(key.prefix(80))' in a binding")
            }
            if let condition = o["condition"] {
                guard let c = condition.objectValue, let expression = c["expression"]?.stringValue else {
                    throw bad("the condition of binding \(role) needs an expression")
                }
                // Parsed now, so a condition this server could not evaluate is never stored.
                _ = try IAMCondition(expression)
                for (key, value) in c.members {
                    guard ["title", "description", "expression"].contains(key), value.stringValue != nil else {
                        throw bad("a condition has only string title, description and expression")
                    }
                }
            }
        }
        guard members <= maxMembers else { throw bad("at most \(maxMembers) members in a policy") }
        return bindings
    }
}
