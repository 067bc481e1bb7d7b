package import SiloCore
import SiloHTTP
package import SiloServerKit
package import SiloWire

/// The parts of GCS's object resource that depend on the bucket: holds given by default, object
/// retention (only in buckets that enable it; Locked cannot be shortened or removed, Unlocked only with
/// `overrideUnlockedRetention=true`), predefined ACLs, and what a read adds — `retentionExpirationTime` from the
/// bucket's retention policy, `acl` and `owner` in `projection=full` to a caller who may read them.
enum ObjectResource {

    /// `predefinedAcl=` on object writes, as GCS expands it.
    package static func predefined(_ name: String, owner: String?) throws -> [ACLEntry] {
        let ownerEntry = owner.map { [ACLEntry(entity: $0, role: "OWNER")] } ?? []
        switch name.lowercased() {
        case "private": return ownerEntry
        case "projectprivate":
            return ownerEntry + [
                ACLEntry(entity: "project-owners-\(ProjectACL.projectNumber)", role: "OWNER"),
                ACLEntry(entity: "project-editors-\(ProjectACL.projectNumber)", role: "OWNER"),
                ACLEntry(entity: "project-viewers-\(ProjectACL.projectNumber)", role: "READER"),
            ]
        case "publicread": return ownerEntry + [ACLEntry(entity: "allUsers", role: "READER")]
        case "authenticatedread": return ownerEntry + [ACLEntry(entity: "allAuthenticatedUsers", role: "READER")]
        case "bucketownerread":
            return ownerEntry + [ACLEntry(entity: "project-owners-\(ProjectACL.projectNumber)", role: "READER")]
        case "bucketownerfullcontrol":
            return ownerEntry + [ACLEntry(entity: "project-owners-\(ProjectACL.projectNumber)", role: "OWNER")]
        default: throw StorageError(.invalidArgument, "Invalid argument: predefinedAcl \(name.prefix(40))")
        }
    }

    /// `predefinedAcl` on inserts and patches; copy, rewrite and compose name it `destinationPredefinedAcl`.
    static func predefinedACL(_ query: QueryParameters) -> String? {
        query["destinationPredefinedAcl"] ?? query["predefinedAcl"]
    }

    /// The ACL entity of the caller who creates an object: `user-<email>` from a token's `email` claim, else none.
    static func owner(_ principal: Principal?) -> String? {
        guard let principal, let claims = try? JSONValue.parse(Array(principal.claimsJSON.utf8)),
            let email = claims.objectValue?["email"]?.stringValue, !email.isEmpty, email.utf8.count <= 254,
            FieldText.isValid(email)
        else { return nil }
        return "user-" + email
    }

    /// Applies the GCS-only keys of a metadata body to `fields`: on a new object (`existing == nil`) the bucket's
    /// default event-based hold, the ACL (`predefinedAcl`, the body's, or the default) and its owner; on every write
    /// the holds, storage class, contexts and retention rules.
    static func apply(
        _ changes: ObjectExtrasChanges, to fields: inout ObjectFields, existing: ObjectFields?,
        bucket: BucketResource?, query: QueryParameters, principal: Principal?, replacing: Bool, now: Timestamp,
        object: String
    ) throws {
        try apply(
            changes, to: &fields, existing: existing, bucket: bucket, predefinedACL: predefinedACL(query),
            overrideUnlockedRetention: query["overrideUnlockedRetention"]?.lowercased() == "true",
            principal: principal, replacing: replacing, now: now, object: object)
    }

    /// The same, with the request's options given as values (the XML API sends them as headers).
    package static func apply(
        _ changes: ObjectExtrasChanges, to fields: inout ObjectFields, existing: ObjectFields?,
        bucket: BucketResource?, predefinedACL: String?, overrideUnlockedRetention: Bool, principal: Principal?,
        replacing: Bool, now: Timestamp, object: String
    ) throws {
        var extras = fields.extras
        if existing == nil {
            if bucket?.defaultEventBasedHold == true { extras.eventBasedHold = true }
            let owner = owner(principal)
            extras.owner = owner
            if let name = predefinedACL, !name.isEmpty {
                extras.acl = ACLEntry.json(try predefined(name, owner: owner))
            } else if changes.acl == nil, bucket?.fields["defaultObjectAcl"] != nil {
                // A bucket's own default is copied at creation; GCS's default is rendered, not stored.
                extras.acl = ACLEntry.json(ProjectACL.defaultACL(bucket, owner: owner))
            }
        } else if let name = predefinedACL, !name.isEmpty {
            extras.acl = ACLEntry.json(try predefined(name, owner: extras.owner))
        }
        if let acl = changes.acl {
            if bucket?.uniformBucketLevelAccess == true { throw uniformAccessError }
            if bucket?.publicAccessPreventionEnforced == true,
                acl.contains(where: { $0.entity == "allUsers" || $0.entity == "allAuthenticatedUsers" })
            {
                throw BucketResource.publicAccessPrevented
            }
        }
        try changes.apply(to: &extras, replacing: replacing, now: now)
        try applyRetention(
            changes.retention, to: &extras, bucket: bucket,
            override: overrideUnlockedRetention, replacing: replacing,
            object: object)
        fields.extras = extras
    }

    private static func applyRetention(
        _ change: ObjectExtrasChanges.Retention, to extras: inout ObjectExtras, bucket: BucketResource?,
        override: Bool, replacing: Bool, object: String
    ) throws {
        let current = extras.retentionMode.flatMap { mode in extras.retainUntil.map { (mode, $0) } }
        var wanted: (mode: String, until: Timestamp)?
        switch change {
        case .keep:
            guard replacing else { return }
            wanted = nil
        case .remove: wanted = nil
        case .set(let mode, let until):
            guard bucket?.objectRetentionEnabled == true else {
                throw StorageError(
                    .invalidArgument, "Invalid argument: object retention is not enabled on the bucket of \(object)")
            }
            wanted = (mode, until)
        }
        if let (mode, until) = current {
            let weakens = wanted.map { $0.until < until || $0.mode != mode } ?? true
            if weakens && mode == "Locked" {
                throw StorageError(
                    .permissionDenied, "The retention of \(object) is locked: it cannot be shortened or removed")
            }
            if weakens && !override {
                throw StorageError(
                    .permissionDenied,
                    "Changing the unlocked retention of \(object) requires overrideUnlockedRetention=true")
            }
        }
        extras.retentionMode = wanted?.mode
        extras.retainUntil = wanted?.until
    }

    static let uniformAccessError = StorageError(
        .invalidArgument,
        "Cannot use ACL API to access object ACLs when uniform bucket-level access is enabled. Read more at "
            + "https://cloud.google.com/storage/docs/uniform-bucket-level-access")

    /// What a read adds to the stored resource; `full`: the ACL and the owner as well.
    package static func extra(_ record: ObjectRecord, bucket: BucketResource?, full: Bool) -> JSONObject {
        var o = JSONObject()
        if let period = bucket?.retentionPolicy?.period, period > 0 {
            let expiry = Timestamp(microseconds: record.timeCreated.microseconds + period * 1_000_000)
            o["retentionExpirationTime"] = .string(expiry.rfc3339)
        }
        if full {
            if bucket?.uniformBucketLevelAccess != true {
                let entries = ACLEntry.parse(record.fields.extras.acl) ?? ProjectACL.defaultACL(bucket, owner: nil)
                o["acl"] = .array(entries.map { aclJSON($0, record: record) })
            }
            if let owner = record.fields.extras.owner {
                o["owner"] = .object(["entity": .string(owner)])
            }
        }
        return o
    }

    /// One `storage#objectAccessControl`.
    package static func aclJSON(_ entry: ACLEntry, record: ObjectRecord) -> JSONValue {
        var o: JSONObject = [
            "kind": .string("storage#objectAccessControl"),
            "id": .string("\(record.bucket.rawValue)/\(record.name.rawValue)/\(record.generation)/\(entry.entity)"),
            "bucket": .string(record.bucket.rawValue), "object": .string(record.name.rawValue),
            "generation": .string(String(record.generation)), "entity": .string(entry.entity),
            "role": .string(entry.role), "etag": .string(record.etag),
        ]
        ACLEntryDetails.add(entry, to: &o)
        return .object(o)
    }
}

extension ObjectService {

    /// A soft-deleted version as GCS shows it: with `softDeleteTime` and `hardDeleteTime`.
    package func gcsObject(_ found: SoftDeletedObject, _ context: RequestContext) -> JSONValue {
        let full = showsACL(found.record, context, bucket: (try? bucketResource(found.record.bucket)) ?? nil)
        var extra = ObjectResource.extra(found.record, bucket: nil, full: full)
        extra["softDeleteTime"] = .string(found.deletion.at.rfc3339)
        extra["hardDeleteTime"] = .string(found.deletion.hardDeleteAt.rfc3339)
        return GCSJSON.object(found.record, base: externalBase(context), extra: extra)
    }

    /// `storage#object` as a GCS read shows it: the stored resource plus what the bucket adds.
    package func gcsObject(_ record: ObjectRecord, _ context: RequestContext, bucket: BucketResource?? = nil)
        -> JSONValue
    {
        let resource = bucket ?? (try? bucketResource(record.bucket))
        return GCSJSON.object(
            record, base: externalBase(context),
            extra: ObjectResource.extra(
                record, bucket: resource ?? nil, full: showsACL(record, context, bucket: resource ?? nil)))
    }

    /// Whether a read shows `record`'s ACL and owner: `projection=full` asks for them, and GCS shows them only to a
    /// caller who holds `storage.objects.getIamPolicy` on that version (by the bucket's IAM, or OWNER in the
    /// version's own ACL). Anyone else gets the resource without them, as `noAcl` would give it (gsutil's `ls -L`
    /// then prints "ACCESS DENIED" for the ACL) — on reads, listings and the answers of writes alike.
    package func showsACL(_ record: ObjectRecord, _ context: RequestContext, bucket: BucketResource?) -> Bool {
        guard context.query["projection"] == "full" else { return false }
        return GCSAccess(service: self).refusal(.objectsGetIamPolicy, on: record, context.principal, bucket: bucket)
            == nil
    }
}
