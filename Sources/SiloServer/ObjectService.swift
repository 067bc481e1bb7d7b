import SiloCore
import SiloWire

/// The operations the protocol front ends (v0 today, GCS JSON later) share: bucket checks, access decisions,
/// committing uploads, token bookkeeping. Routes translate HTTP to these calls and their results back.
final class ObjectService: Sendable {
    let configuration: ServerConfiguration
    let metadata: any MetadataStore
    let blobs: any BlobStore
    let policy: any AccessPolicy
    let credentials: any CredentialVerifier
    let logger: Logger
    let smallBlobs: SmallBlobCache
    let versionResponses: VersionResponseCache

    init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore, policy: any AccessPolicy,
        credentials: any CredentialVerifier, logger: Logger
    ) {
        self.credentials = credentials
        self.configuration = configuration
        self.metadata = metadata
        self.blobs = blobs
        self.policy = policy
        self.logger = logger
        self.smallBlobs = SmallBlobCache(
            capacityBytes: configuration.smallBlobCacheBytes, maxEntryBytes: Int(configuration.inlineDownloadLimit))
        self.versionResponses = VersionResponseCache(capacity: configuration.versionResponseCacheEntries)
    }

    /// Throws `.notFound` for a bucket this server does not serve.
    func checkServed(_ bucket: BucketName) throws {
        if let served = configuration.buckets, !served.contains(bucket) {
            throw StorageError(.notFound, "Not Found. Bucket \(bucket) is not served here.")
        }
    }

    /// Decides access; admin credentials always pass. Throws `.permissionDenied` with the emulator's wording.
    func authorize(_ request: AccessRequest) throws {
        if request.principal?.isAdmin == true { return }
        guard policy.allows(request) else {
            let word: String
            switch request.operation {
            case .get: word = "READ"
            case .list: word = "LIST"
            case .create, .update: word = "WRITE"
            case .delete: word = "DELETE"
            }
            throw StorageError(.permissionDenied, "Permission denied. No \(word) permission.")
        }
    }

    /// The live object, after the read is authorized (403 is decided before 404, as Firebase does).
    func readableObject(_ bucket: BucketName, _ name: ObjectName, context: RequestContext, generation: Int64? = nil)
        throws -> ObjectRecord
    {
        try checkServed(bucket)
        let record = try metadata.object(bucket, name, generation: generation)
        try authorize(
            AccessRequest(
                operation: .get, bucket: bucket, path: name.rawValue, principal: context.principal,
                resource: record, time: context.time))
        guard let record else { throw StorageError.objectNotFound(bucket, name) }
        return record
    }

    /// Gives an object its first download token if it has none (Firebase does this on the first v0 read; it bumps
    /// the metageneration).
    func ensureDownloadToken(_ record: ObjectRecord, time: Timestamp) throws -> ObjectRecord {
        guard record.fields.downloadTokens.isEmpty else { return record }
        do {
            return try metadata.updateObject(
                record.bucket, record.name,
                conditions: Preconditions(ifGenerationMatch: record.generation), at: time
            ) { fields in
                if fields.downloadTokens.isEmpty { fields.downloadTokens = [RandomID.uuid()] }
            }
        } catch let error as StorageError where error.code == .preconditionFailed {
            // Overwritten meanwhile: serve what we read; the next read will add a token to the new version.
            return record
        }
    }

    /// Makes an uploaded blob the live version of `name`: authorizes `create` with the proposed object,
    /// commits in one metadata transaction, then deletes the replaced blob.
    func commitUpload(
        bucket: BucketName, name: ObjectName, blobID: BlobID, summary: BlobSummary, fields: ObjectFields,
        conditions: Preconditions, principal: Principal?, time: Timestamp
    ) throws -> ObjectRecord {
        try checkServed(bucket)
        let existing = try metadata.object(bucket, name, generation: nil)
        try authorize(
            AccessRequest(
                // An overwrite is a `create` with `resource` set (issue 4; the Firebase emulator does the same).
                operation: .create, bucket: bucket, path: name.rawValue,
                principal: principal, resource: existing, proposedFields: fields, proposedSize: summary.size, time: time
            ))
        return try commit(
            ObjectDraft(bucket: bucket, name: name, blob: summary, blobID: blobID, fields: fields),
            conditions: conditions, time: time)
    }

    /// Makes `draft` live (the store creates the bucket if needed and checks `conditions` in its transaction), then
    /// releases the version it replaced.
    func commit(_ draft: ObjectDraft, conditions: Preconditions, time: Timestamp) throws -> ObjectRecord {
        let (stored, replaced) = try metadata.insertObject(draft, conditions: conditions, at: time)
        if let replaced { release(replaced) }
        return stored
    }

    /// Deletes the blob of a version the store has just replaced or deleted — unless the bucket keeps it as a
    /// noncurrent version, or the blob store cannot keep it readable for downloads already under way (then the
    /// collector deletes it after its grace period; the store has it on the garbage list).
    func release(_ version: ObjectRecord) {
        guard blobs.readersSurviveDeletion else { return }
        do {
            guard try metadata.object(version.bucket, version.name, generation: version.generation) == nil else {
                return
            }
        } catch {
            return  // The collector decides later, from the store's garbage list.
        }
        discardBlob(version.blobID)
    }

    /// Deletes a blob nothing references any more, and forgets it. Failures are left to the collector.
    func discardBlob(_ id: BlobID) {
        do {
            try blobs.deleteBlob(id)
            try metadata.forgetBlob(id)
        } catch {
            logger.warning(
                "blob deletion deferred to the collector",
                metadata: ["silo.blob": id.rawValue, "silo.error": "\(error)"])
        }
    }
}

extension StorageError {
    static func objectNotFound(_ bucket: BucketName, _ name: ObjectName) -> StorageError {
        StorageError(.notFound, "Not Found. Object \(bucket)/\(name) does not exist.")
    }
}
