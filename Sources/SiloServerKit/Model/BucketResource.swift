package import SiloCore
package import SiloWire

/// GCS's bucket resource beyond what the store keeps in columns, kept as JSON in ``BucketRecord/resource``: what
/// the rest of the server reads of it (retention, soft delete, holds, the project). The GCS APIs validate, merge and
/// render it (SiloGCSAPI's `BucketResourceFields.swift`).
package struct BucketResource {
    /// The stored fields, in GCS's JSON shape (int64 values as strings).
    package var fields: JSONObject
    package var versioning: Bool

    package init(_ record: BucketRecord) {
        fields = (try? JSONValue.parse(record.resource))?.objectValue ?? JSONObject()
        versioning = record.versioning
    }

    package init(fields: JSONObject = JSONObject(), versioning: Bool = false) {
        self.fields = fields
        self.versioning = versioning
    }

    // MARK: What the rest of the server reads

    package var storageClass: String { fields["storageClass"]?.stringValue ?? "STANDARD" }
    package var location: String { fields["location"]?.stringValue ?? "US" }

    /// The retention policy in force: its period and whether it is locked.
    package var retentionPolicy: (period: Int64, isLocked: Bool)? {
        guard let policy = fields["retentionPolicy"]?.objectValue, let period = policy["retentionPeriod"]?.int64Value
        else { return nil }
        return (period, policy["isLocked"] == .bool(true))
    }

    /// Seconds a deleted object stays restorable (0: soft delete off).
    var softDeleteSeconds: Int64 {
        fields["softDeletePolicy"]?.objectValue?["retentionDurationSeconds"]?.int64Value ?? 0
    }

    package var defaultEventBasedHold: Bool { fields["defaultEventBasedHold"] == .bool(true) }

    package var uniformBucketLevelAccess: Bool {
        fields["iamConfiguration"]?.objectValue?["uniformBucketLevelAccess"]?.objectValue?["enabled"] == .bool(true)
    }

    package var publicAccessPreventionEnforced: Bool {
        fields["iamConfiguration"]?.objectValue?["publicAccessPrevention"] == .string("enforced")
    }

    package var objectRetentionEnabled: Bool { fields["objectRetention"]?.objectValue?["mode"] == .string("Enabled") }

    var hierarchicalNamespace: Bool {
        fields["hierarchicalNamespace"]?.objectValue?["enabled"] == .bool(true)
    }

    /// Where the project a bucket was created in (`POST /b?project=`, `x-goog-project-id`) is kept in ``fields``.
    package static let projectKey = "_project"

    /// The project `record` belongs to: the one it was created in, else the one its name says for a Firebase default
    /// bucket (`P.appspot.com`, `P.firebasestorage.app`: the buckets the emulator and v0 uploads create), else nil —
    /// a bucket of no known project, which every project's listing shows (one server is one project by default).
    package static func project(of record: BucketRecord) -> String? {
        if let stored = BucketResource(record).fields[projectKey]?.stringValue { return stored }
        let name = record.name.rawValue
        for suffix in [".appspot.com", ".firebasestorage.app"] where name.hasSuffix(suffix) {
            return String(name.dropLast(suffix.count))
        }
        return nil
    }

    /// Marks, in the stored fields, that `versioning` was set at least once (keys starting with `_` are not shown).
    package static let versioningSetKey = "_versioningSet"

    /// The stored form.
    package var json: String { JSONValue.object(fields).serializedString }

}

extension ObjectService {
    /// The bucket's GCS resource, nil when the bucket does not exist.
    package func bucketResource(_ bucket: BucketName) throws -> BucketResource? {
        try metadata.bucket(bucket).map(BucketResource.init)
    }
}
