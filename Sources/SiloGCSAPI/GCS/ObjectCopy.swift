package import SiloCore
package import SiloServerKit
package import SiloWire

/// What the JSON API's copy/rewrite and the XML API's `x-goog-copy-source` PUT share: which version is read, what
/// of its metadata the copy keeps, and how the copy is made a new object of the destination bucket.
extension ObjectService {
    /// The version a copy reads (`generation`, else the live one), with the source's conditions checked.
    package func copySource(_ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions)
        throws
        -> ObjectRecord
    {
        guard let source = try object(bucket, name, generation: generation) else {
            throw StorageError(.notFound, "No such object: \(bucket)/\(name)")
        }
        try conditions.check(source, describing: "\(bucket)/\(name)")
        return source
    }

    /// The metadata a copy takes from its source: the copy is a new object, so no holds, retention, ACL or storage
    /// class of the source's; its contexts go with it.
    static func copiedFields(_ source: ObjectRecord) -> ObjectFields {
        var fields = source.fields
        fields.extras = ObjectExtras(contexts: source.fields.extras.contexts)
        return fields
    }

    /// Writes the bytes of `source` as a new version of `destination` with `fields`, the GCS-only keys in `extras`
    /// and `predefinedACL` applied as to a new object of the destination bucket; `conditions` are checked on the
    /// destination in the commit's transaction, and `principal`'s right to write it is decided again there.
    package func copy(
        _ source: ObjectRecord, to destination: (BucketName, ObjectName), fields: ObjectFields,
        extras: ObjectExtrasChanges, predefinedACL: String?, principal: Principal?, conditions: Preconditions,
        time: Timestamp
    ) throws -> (record: ObjectRecord, bucket: BucketResource?) {
        var fields = fields
        let resource = try bucketResource(destination.0)
        try ObjectResource.apply(
            extras, to: &fields, existing: nil, bucket: resource, predefinedACL: predefinedACL,
            overrideUnlockedRetention: false, principal: principal, replacing: false, now: time,
            object: "\(destination.0)/\(destination.1)")
        let record = try copyBytes(
            of: [source], into: destination.0, destination.1, fields: fields, conditions: conditions,
            principal: principal, componentCount: nil, time: time)
        return (record, resource)
    }
}
