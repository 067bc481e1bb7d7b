package import SiloCore
package import SiloServerKit
package import SiloWire

/// The bucket resource as the GCS APIs write and show it: every writable field validated as GCS validates it,
/// merged on PATCH (null deletes, objects merge recursively, RFC 7386) and replaced on PUT, with the fields GCS
/// derives itself (effective and toggle times, locked times, location type, RPO) filled in, and rendered.
extension BucketResource {
    var locationType: String {
        if fields["customPlacementConfig"]?.objectValue?["dataLocations"] != nil || Self.dualRegions.contains(location)
        {
            return "dual-region"
        }
        return Self.multiRegions.contains(location) ? "multi-region" : "region"
    }

    static let storageClasses: Set<String> = [
        "STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE", "MULTI_REGIONAL", "REGIONAL", "DURABLE_REDUCED_AVAILABILITY",
    ]
    /// GCS's predefined dual-regions; `customPlacementConfig` makes any location dual-region too.
    static let dualRegions: Set<String> = ["NAM4", "EUR4", "ASIA1", "EUR5", "EUR7", "EUR8"]
    static let multiRegions: Set<String> = ["US", "EU", "ASIA"]
    /// GCS's soft-delete default for new buckets, and its bounds (0 turns soft delete off).
    static let defaultSoftDeleteSeconds: Int64 = 604_800
    static let softDeleteRange: ClosedRange<Int64> = 604_800...7_776_000
    /// The longest retention period GCS accepts (100 years).
    static let maxRetentionSeconds: Int64 = 3_155_760_000

    /// Fields a client may set, with their checks.
    static let writable: Set<String> = [
        "storageClass", "location", "customPlacementConfig", "rpo", "labels", "lifecycle", "retentionPolicy",
        "softDeletePolicy", "defaultEventBasedHold", "versioning", "iamConfiguration", "autoclass",
        "hierarchicalNamespace", "ipFilter", "encryption", "billing", "cors", "website", "logging", "objectRetention",
        "acl", "defaultObjectAcl",
    ]
    /// Fields clients send back from a GET (buckets.update takes the whole resource): ignored.
    static let readOnly: Set<String> = [
        "kind", "id", "selfLink", "projectNumber", "name", "timeCreated", "updated", "metageneration", "etag",
        "generation", "owner", "locationType", "satisfiesPZS", "satisfiesPZI", "softDeleteTime", "hardDeleteTime",
        "zoneAffinity", "project",
    ]

    /// What a new bucket stores: `body` validated, GCS's defaults (soft delete of 7 days, as for every new GCS
    /// bucket; `objectRetention` when the insert asked for it) and the derived times.
    package static func inserted(_ body: JSONObject, enableObjectRetention: Bool, now: Timestamp) throws
        -> BucketResource
    {
        var resource = BucketResource()
        try resource.apply(body, replacing: true, creating: true, now: now, previous: BucketResource())
        if resource.fields["softDeletePolicy"] == nil {
            resource.fields["softDeletePolicy"] = .object([
                "retentionDurationSeconds": .string(String(defaultSoftDeleteSeconds)),
                "effectiveTime": .string(now.rfc3339),
            ])
        }
        if enableObjectRetention { resource.fields["objectRetention"] = .object(["mode": .string("Enabled")]) }
        return resource
    }

    package static let publicAccessPrevented = StorageError(
        .preconditionFailed,
        "The bucket's public access prevention policy is enforced: allUsers and allAuthenticatedUsers cannot be "
            + "granted access")

    /// Whether an ACL (as JSON) names `allUsers` or `allAuthenticatedUsers`.
    static func grantsPublic(_ acl: JSONValue?) -> Bool {
        (acl?.arrayValue ?? []).contains {
            let entity = $0.objectValue?["entity"]?.stringValue
            return entity == "allUsers" || entity == "allAuthenticatedUsers"
        }
    }

    /// Sets an ACL from a predefined name, with the checks a body's ACL gets.
    package mutating func setACL(_ key: String, _ entries: [ACLEntry]) throws {
        if uniformBucketLevelAccess {
            throw StorageError(.invalidArgument, "Cannot set \(key) while uniform bucket-level access is enabled")
        }
        let value = JSONValue.array(entries.map(ProjectACL.storedJSON))
        if publicAccessPreventionEnforced, Self.grantsPublic(value) { throw Self.publicAccessPrevented }
        fields[key] = value
    }

    /// Where the bucket's IAM policy is kept in ``fields``: not a field of the resource, never rendered.
    package static let iamPolicyKey = "_iamPolicy"

    /// PATCH (`replacing` false: merge) or PUT (`replacing` true: the body is the whole resource).
    package mutating func update(_ body: JSONObject, replacing: Bool, now: Timestamp) throws {
        let previous = self
        if replacing { self = BucketResource(fields: JSONObject(), versioning: false) }
        try apply(body, replacing: replacing, creating: false, now: now, previous: previous)
        for key in ["acl", "defaultObjectAcl"] {
            guard let value = body[key], value != .null else { continue }
            if uniformBucketLevelAccess {
                throw StorageError(
                    .invalidArgument,
                    "Cannot set \(key) while uniform bucket-level access is enabled. Read more at "
                        + "https://cloud.google.com/storage/docs/uniform-bucket-level-access")
            }
            if publicAccessPreventionEnforced, Self.grantsPublic(fields[key]) {
                throw Self.publicAccessPrevented
            }
        }
        // The IAM policy has its own calls; ACLs survive an update that does not name them.
        if replacing {
            for (key, value) in previous.fields.members
            where key.hasPrefix("_") && !(key == Self.versioningSetKey && body["versioning"] != nil) {
                fields[key] = value
            }
            for key in ["acl", "defaultObjectAcl"] where body[key] == nil { fields[key] = previous.fields[key] }
        }
        // Set at creation only, and owned by the server: they survive an update that leaves them out.
        for kept in ["hierarchicalNamespace", "objectRetention"] where replacing {
            fields[kept] = previous.fields[kept]
        }
        if let locked = previous.retentionPolicy, locked.isLocked {
            guard let now = retentionPolicy, now.period >= locked.period else {
                throw StorageError(
                    .permissionDenied, "Cannot reduce or remove the locked retention policy of this bucket")
            }
            var policy = fields["retentionPolicy"]?.objectValue ?? JSONObject()
            policy["isLocked"] = .bool(true)
            fields["retentionPolicy"] = .object(policy)
        }
    }

    private mutating func apply(
        _ body: JSONObject, replacing: Bool, creating: Bool, now: Timestamp, previous: BucketResource
    ) throws {
        for (key, value) in body.members {
            if Self.readOnly.contains(key) { continue }
            guard Self.writable.contains(key) else {
                throw StorageError(.invalidArgument, "Invalid argument: unknown bucket field '\(key.prefix(80))'")
            }
            if key == "versioning" {
                switch value {
                case .null:
                    versioning = false
                    fields[Self.versioningSetKey] = nil
                case .object(let o):
                    guard let enabled = o["enabled"] else { continue }
                    guard case .bool(let on) = enabled else {
                        throw StorageError(.invalidArgument, "versioning.enabled must be true or false")
                    }
                    versioning = on
                    fields[Self.versioningSetKey] = .bool(true)
                default: throw StorageError(.invalidArgument, "versioning must be an object or null")
                }
                continue
            }
            if key == "hierarchicalNamespace" && !creating {
                // Fixed at creation; a PUT of the resource as read back carries it unchanged.
                if value == previous.fields[key] { continue }
                throw StorageError(.invalidArgument, "hierarchicalNamespace can only be set when a bucket is created")
            }
            if key == "objectRetention" { continue }  // set by `enableObjectRetention` at insert only
            try Self.check(key, value)
            var value = value
            if key == "acl" || key == "defaultObjectAcl", let entries = value.arrayValue {
                // Kept as entity and role only; the rest of an entry is derived when it is shown.
                value = .array(
                    try entries.map { ProjectACL.storedJSON(try ACLEntry(json: $0, bucket: key == "acl")) })
            }
            // Replaced or merged, a field keeps no nulls: they delete (RFC 7386), they are not values.
            fields[key] = Self.merge(replacing ? nil : fields[key], value).map(BucketFieldShape.withoutNulls)
        }
        derive(now: now, previous: previous)
    }

    /// RFC 7386: objects merge recursively, `null` deletes, anything else replaces.
    static func merge(_ target: JSONValue?, _ patch: JSONValue) -> JSONValue? {
        guard case .object(let patchObject) = patch else { return patch == .null ? nil : patch }
        var result = target?.objectValue ?? JSONObject()
        for (key, value) in patchObject.members { result[key] = merge(result[key], value) }
        return .object(result)
    }

    // MARK: Validation

    private static func check(_ key: String, _ value: JSONValue) throws {
        func bad(_ what: String) -> StorageError { StorageError(.invalidArgument, "Invalid argument: \(key) \(what)") }
        if value == .null { return }
        try BucketFieldShape.fields[key]?.check(value, key)
        switch key {
        case "storageClass":
            guard let s = value.stringValue, storageClasses.contains(s.uppercased()) else {
                throw bad("is not a storage class")
            }
        case "location":
            guard let s = value.stringValue, !s.isEmpty, s.utf8.count <= 64,
                s.utf8.allSatisfy({ $0 == 0x2D || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0 & 0xDF) })
            else { throw bad("is not a location") }
        case "rpo":
            guard let s = value.stringValue, ["DEFAULT", "ASYNC_TURBO"].contains(s) else {
                throw bad("must be DEFAULT or ASYNC_TURBO")
            }
        case "labels":
            guard let labels = value.objectValue, labels.members.count <= 64 else {
                throw bad("must be at most 64 labels")
            }
            for (name, label) in labels.members {
                guard isLabel(name, key: true),
                    label == .null || label.stringValue.map({ isLabel($0, key: false) }) == true
                else { throw bad("has an invalid label '\(name.prefix(63))'") }
            }
        case "retentionPolicy":
            guard let policy = value.objectValue else { throw bad("must be an object") }
            if let period = policy["retentionPeriod"], period != .null {
                guard let seconds = period.int64Value, (1...maxRetentionSeconds).contains(seconds) else {
                    throw bad("retentionPeriod must be 1 to \(maxRetentionSeconds) seconds")
                }
            }
        case "softDeletePolicy":
            guard let policy = value.objectValue else { throw bad("must be an object") }
            if let duration = policy["retentionDurationSeconds"], duration != .null {
                guard let seconds = duration.int64Value, seconds == 0 || softDeleteRange.contains(seconds) else {
                    throw bad("retentionDurationSeconds must be 0 or 604800 to 7776000")
                }
            }
        case "defaultEventBasedHold":
            guard case .bool = value else { throw bad("must be true or false") }
        case "iamConfiguration":
            guard let iam = value.objectValue else { throw bad("must be an object") }
            for access in ["uniformBucketLevelAccess", "bucketPolicyOnly"] {
                if let enabled = iam[access]?.objectValue?["enabled"],
                    !(enabled == .null || enabled == .bool(true) || enabled == .bool(false))
                {
                    throw bad("\(access).enabled must be true or false")
                }
            }
            if let pap = iam["publicAccessPrevention"], pap != .null {
                guard let s = pap.stringValue, ["inherited", "enforced", "unspecified"].contains(s) else {
                    throw bad("publicAccessPrevention must be inherited or enforced")
                }
            }
        case "autoclass":
            guard let autoclass = value.objectValue else { throw bad("must be an object") }
            if let enabled = autoclass["enabled"],
                !(enabled == .bool(true) || enabled == .bool(false) || enabled == .null)
            {
                throw bad("enabled must be true or false")
            }
            if let terminal = autoclass["terminalStorageClass"], terminal != .null {
                guard let s = terminal.stringValue, ["NEARLINE", "ARCHIVE"].contains(s) else {
                    throw bad("terminalStorageClass must be NEARLINE or ARCHIVE")
                }
            }
        case "lifecycle":
            guard let lifecycle = value.objectValue else { throw bad("must be an object") }
            guard let rules = lifecycle["rule"] else { return }
            guard let list = rules.arrayValue, list.count <= 100 else {
                throw bad("rule must be a list of at most 100")
            }
            for rule in list {
                guard let rule = rule.objectValue, let action = rule["action"]?.objectValue,
                    let type = action["type"]?.stringValue,
                    ["Delete", "SetStorageClass", "AbortIncompleteMultipartUpload"].contains(type)
                else {
                    throw bad("rule needs an action of type Delete, SetStorageClass or AbortIncompleteMultipartUpload")
                }
                if type == "SetStorageClass" || (action["storageClass"] ?? .null) != .null {
                    guard let target = action["storageClass"]?.stringValue, storageClasses.contains(target) else {
                        throw bad("SetStorageClass needs a storageClass")
                    }
                }
                for name in ["matchesStorageClass"] {
                    for value in rule["condition"]?.objectValue?[name]?.arrayValue ?? [] {
                        guard let s = value.stringValue, storageClasses.contains(s) else {
                            throw bad("\(name) must list storage classes")
                        }
                    }
                }
                let condition = rule["condition"]?.objectValue ?? JSONObject()
                for (name, _) in condition.members where !LifecycleRule.conditions.contains(name) {
                    throw bad("condition '\(name.prefix(60))' is not a lifecycle condition")
                }
            }
        case "hierarchicalNamespace", "billing", "ipFilter", "encryption", "website", "logging",
            "customPlacementConfig":
            guard value.objectValue != nil else { throw bad("must be an object") }
        case "cors":
            guard value.arrayValue != nil else { throw bad("must be a list") }
        case "acl", "defaultObjectAcl":
            guard let entries = value.arrayValue else { throw bad("must be a list") }
            for entry in entries { _ = try ACLEntry(json: entry, bucket: key == "acl") }
        default:
            break
        }
    }

    /// GCS label rules: lowercase letters, digits, `_` and `-`, at most 63 characters; keys start with a letter.
    private static func isLabel(_ text: String, key: Bool) -> Bool {
        guard text.utf8.count <= 63, !key || !text.isEmpty else { return false }
        if key, let first = text.unicodeScalars.first, !(first.properties.isLowercase) { return false }
        return text.unicodeScalars.allSatisfy {
            $0.properties.isLowercase || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" || $0.value > 0x7F
        }
    }

    // MARK: Derived fields

    /// The times and defaults GCS sets itself, from what changed since `previous`.
    private mutating func derive(now: Timestamp, previous: BucketResource) {
        let stamp = JSONValue.string(now.rfc3339)
        if var policy = fields["retentionPolicy"]?.objectValue {
            if let period = policy["retentionPeriod"]?.int64Value {
                policy["retentionPeriod"] = .string(String(period))
            }
            if policy["retentionPeriod"] == nil {
                fields["retentionPolicy"] = nil
            } else {
                let old = previous.fields["retentionPolicy"]?.objectValue
                policy["effectiveTime"] =
                    old?["retentionPeriod"] == policy["retentionPeriod"] ? (old?["effectiveTime"] ?? stamp) : stamp
                // GCS shows `isLocked` only once the policy is locked.
                policy["isLocked"] = old?["isLocked"] == .bool(true) ? .bool(true) : nil
                fields["retentionPolicy"] = .object(policy)
            }
        }
        if var policy = fields["softDeletePolicy"]?.objectValue {
            let seconds = policy["retentionDurationSeconds"]?.int64Value ?? 0
            policy["retentionDurationSeconds"] = .string(String(seconds))
            let old = previous.fields["softDeletePolicy"]?.objectValue
            policy["effectiveTime"] =
                old?["retentionDurationSeconds"] == policy["retentionDurationSeconds"]
                ? (old?["effectiveTime"] ?? stamp) : stamp
            fields["softDeletePolicy"] = .object(policy)
        }
        if var iam = fields["iamConfiguration"]?.objectValue {
            // bucketPolicyOnly is the old name of uniformBucketLevelAccess: either sets both.
            let ubla = iam["uniformBucketLevelAccess"]?.objectValue ?? iam["bucketPolicyOnly"]?.objectValue
            let enabled = ubla?["enabled"] == .bool(true)
            let wasEnabled = previous.uniformBucketLevelAccess
            var access: JSONObject = ["enabled": .bool(enabled)]
            if enabled {
                let lockedTime =
                    wasEnabled
                    ? previous.fields["iamConfiguration"]?.objectValue?["uniformBucketLevelAccess"]?.objectValue?[
                        "lockedTime"]
                    : nil
                access["lockedTime"] =
                    lockedTime ?? .string(Timestamp(microseconds: now.microseconds + 90 * 86_400 * 1_000_000).rfc3339)
            }
            iam["uniformBucketLevelAccess"] = .object(access)
            iam["bucketPolicyOnly"] = .object(access)
            if iam["publicAccessPrevention"] == nil || iam["publicAccessPrevention"] == .string("unspecified") {
                iam["publicAccessPrevention"] = .string("inherited")
            }
            fields["iamConfiguration"] = .object(iam)
        }
        if var autoclass = fields["autoclass"]?.objectValue {
            let old = previous.fields["autoclass"]?.objectValue
            let enabled = autoclass["enabled"] == .bool(true)
            autoclass["enabled"] = .bool(enabled)
            autoclass["toggleTime"] = old?["enabled"] == autoclass["enabled"] ? (old?["toggleTime"] ?? stamp) : stamp
            if enabled {
                let terminal = autoclass["terminalStorageClass"] ?? old?["terminalStorageClass"] ?? .string("NEARLINE")
                autoclass["terminalStorageClassUpdateTime"] =
                    old?["terminalStorageClass"] == terminal ? (old?["terminalStorageClassUpdateTime"] ?? stamp) : stamp
                autoclass["terminalStorageClass"] = terminal
            } else {
                autoclass["terminalStorageClassUpdateTime"] = nil
            }
            fields["autoclass"] = .object(autoclass)
        }
        if var encryption = fields["encryption"]?.objectValue {
            for config in [
                "googleManagedEncryptionEnforcementConfig", "customerManagedEncryptionEnforcementConfig",
                "customerSuppliedEncryptionEnforcementConfig",
            ] {
                guard var value = encryption[config]?.objectValue else { continue }
                let old = previous.fields["encryption"]?.objectValue?[config]?.objectValue
                // A restriction takes effect at a time; "NotRestricted" has none (GCS leaves it out).
                if value["restrictionMode"] == .string("NotRestricted") {
                    value["effectiveTime"] = nil
                } else {
                    value["effectiveTime"] =
                        old?["restrictionMode"] == value["restrictionMode"] ? (old?["effectiveTime"] ?? stamp) : stamp
                }
                encryption[config] = .object(value)
            }
            fields["encryption"] = .object(encryption)
        }
        if let location = fields["location"]?.stringValue { fields["location"] = .string(location.uppercased()) }
        if let storageClass = fields["storageClass"]?.stringValue {
            fields["storageClass"] = .string(storageClass.uppercased())
        }
    }

    /// The fields for a bucket resource, in the order GCS puts them after the common ones; `full`
    /// (`projection=full`) adds the ACLs and the owner, as GCS does unless uniform bucket-level access is on.
    package func rendered(full: Bool = false, name: BucketName? = nil) -> JSONObject {
        var out = fields
        out["storageClass"] = .string(storageClass)
        out["location"] = .string(location)
        out["locationType"] = .string(locationType)
        if fields["rpo"] == nil && locationType != "region" { out["rpo"] = .string("DEFAULT") }
        // GCS shows `versioning` once it has been set (`enabled: false` after suspending), never on a bucket that was
        // created without it.
        out["versioning"] =
            versioning || fields[Self.versioningSetKey] != nil ? .object(["enabled": .bool(versioning)]) : nil
        if var policy = out["retentionPolicy"]?.objectValue, policy["isLocked"] == .bool(false) {
            // Stored before `isLocked` was left out until locked.
            policy["isLocked"] = nil
            out["retentionPolicy"] = .object(policy)
        }
        // Every GCS bucket has an IAM configuration, uniform access off until it is turned on.
        if out["iamConfiguration"] == nil {
            let off = JSONValue.object(["enabled": .bool(false)])
            out["iamConfiguration"] = .object([
                "bucketPolicyOnly": off, "uniformBucketLevelAccess": off,
                "publicAccessPrevention": .string("inherited"),
            ])
        }
        out["acl"] = nil
        out["defaultObjectAcl"] = nil
        // Keys the server keeps for itself (IAM policy, managed folders) start with `_`.
        for key in out.members.map(\.key) where key.hasPrefix("_") { out[key] = nil }
        if full, let name {
            out["owner"] = .object(["entity": .string("project-owners-\(ProjectACL.projectNumber)")])
            if !uniformBucketLevelAccess {
                let acl =
                    ProjectACL.entries(fields["acl"]) ?? ProjectACL.bucketDefault
                let objects =
                    ProjectACL.entries(fields["defaultObjectAcl"])
                    ?? ProjectACL.defaultACL(nil, owner: nil)
                out["acl"] = .array(
                    acl.map { ProjectACL.bucketJSON($0, bucket: name, kind: "storage#bucketAccessControl") }
                )
                out["defaultObjectAcl"] = .array(
                    objects.map {
                        ProjectACL.bucketJSON($0, bucket: name, kind: "storage#objectAccessControl")
                    })
            }
        }
        return out
    }
}

/// The lifecycle conditions GCS knows.
package enum LifecycleRule {
    static let conditions: Set<String> = [
        "age", "createdBefore", "customTimeBefore", "daysSinceCustomTime", "daysSinceNoncurrentTime",
        "noncurrentTimeBefore", "isLive", "numNewerVersions", "matchesStorageClass", "matchesPrefix", "matchesSuffix",
    ]
}
