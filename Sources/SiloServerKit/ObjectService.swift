package import SiloAuth
package import SiloCore
import SiloHTTP
import SiloWire

/// The operations the API front ends (Firebase v0, GCS JSON, XML, the console and batch) share: bucket checks,
/// access decisions, committing uploads, token bookkeeping. Routes translate HTTP to these calls and their results
/// back. Blobs are read through ``InliningBlobStore``, so small objects' bytes come from the metadata store.
package final class ObjectService: Sendable {
    package let configuration: ServerConfiguration
    /// The stores, reached through ``metadata`` and ``blobs``, which refuse on an inline service.
    private let store: any MetadataStore
    private let blobStore: any BlobStore
    package let policy: any AccessPolicy
    let credentials: any CredentialVerifier
    private let underlyingCredentials: any CredentialVerifier
    /// The service accounts behind `credentials`' access tokens and signed URLs, for the token endpoint and POST
    /// policies.
    package let serviceAccounts: ServiceAccountAuthority
    package let logger: Logger
    let smallBlobs: SmallBlobCache
    package let versionResponses: VersionResponseCache
    /// Thumbnails: reads and presets (``ThumbnailService``).
    let images: any ThumbnailService
    /// Deletes the blobs that writes free, after their requests have answered.
    let reclaimer: BlobReclaimer
    /// What the maintenance passes did (``Maintenance``), for `/metrics`.
    let maintenanceCounters: MaintenanceCounters
    /// Which hosts are this server's and which peers may say how a request was addressed.
    package let edge: EdgePolicy
    /// Bytes each caller may have inflated for it by decompressive transcoding.
    let inflation: InflationBudget
    /// Set on the service a socket thread answers with (``inlineView(_:)``): the record of the attempt under way,
    /// which the steps that must not block report to. Nil on workers.
    package let inlineAttempt: InlineAttempt?

    /// The metadata store. On an inline service every use refuses (``InlineAttempt/wouldBlock(_:)``) before the
    /// store is called: an inline answer reads only what the service holds in memory (``object(_:_:generation:)``
    /// from the store's cache, ``SmallBlobCache``, the policy's answer without waiting), so what it may read is this
    /// short list, and anything else sends the request to a worker.
    package var metadata: any MetadataStore {
        get throws {
            if let inlineAttempt { throw inlineAttempt.wouldBlock("the metadata store") }
            return store
        }
    }

    /// The blob store (small objects' bytes come from the metadata store, ``InliningBlobStore``); refuses on an
    /// inline service, like ``metadata``.
    package var blobs: any BlobStore {
        get throws {
            if let inlineAttempt { throw inlineAttempt.wouldBlock("the blob store") }
            return blobStore
        }
    }

    /// The version of `bucket/name` (the live one when `generation` is nil), nil when there is none. Inline, only
    /// the live version the store holds in memory (``MetadataStore/cachedObject(_:_:)``) answers; anything else
    /// refuses.
    package func object(_ bucket: BucketName, _ name: ObjectName, generation: Int64?) throws -> ObjectRecord? {
        guard let inlineAttempt else { return try store.object(bucket, name, generation: generation) }
        if let cached = store.cachedObject(bucket, name), generation == nil || generation == cached.generation {
            return cached
        }
        throw inlineAttempt.wouldBlock("reading \(bucket)/\(name)")
    }

    /// The store's stamp of what it holds in memory for `bucket/name` (``MetadataStore/cacheStamp(_:_:)``): memory
    /// only, so an inline service answers it too.
    package func cacheStamp(_ bucket: BucketName, _ name: ObjectName) -> CacheStamp? { store.cacheStamp(bucket, name) }

    /// Whether `stamp` still holds (``MetadataStore/isCurrent(_:)``); memory only.
    package func isCurrent(_ stamp: CacheStamp) -> Bool { store.isCurrent(stamp) }

    convenience init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore, policy: any AccessPolicy,
        credentials: any CredentialVerifier, logger: Logger, thumbnails: any ThumbnailService
    ) {
        self.init(
            configuration: configuration, metadata: metadata,
            blobs: InliningBlobStore(stored: blobs, metadata: metadata), policy: policy, credentials: credentials,
            logger: logger,
            smallBlobs: SmallBlobCache(
                capacityBytes: configuration.smallBlobCacheBytes, maxEntryBytes: Int(configuration.inlineDownloadLimit)),
            versionResponses: VersionResponseCache(
                capacity: configuration.versionResponseCacheEntries, maxBytes: configuration.versionResponseCacheBytes),
            images: thumbnails, reclaimer: BlobReclaimer(),
            maintenanceCounters: MaintenanceCounters(),
            inflation: InflationBudget(perMinute: configuration.maxInflatedBytesPerCallerPerMinute))
    }

    /// `credentials` is the verifier behind the service accounts (whose HMAC keys are read from `metadata`).
    private init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore, policy: any AccessPolicy,
        credentials: any CredentialVerifier, logger: Logger, smallBlobs: SmallBlobCache,
        versionResponses: VersionResponseCache, images: any ThumbnailService, reclaimer: BlobReclaimer,
        maintenanceCounters: MaintenanceCounters, inflation: InflationBudget, inlineAttempt: InlineAttempt? = nil
    ) {
        var serviceAccounts = configuration.serviceAccounts ?? .none(emulator: configuration.openAdminAPI)
        serviceAccounts.hmacKeys = StoredHMACKeyring(store: metadata, attempt: inlineAttempt)
        self.serviceAccounts = serviceAccounts
        self.credentials = ServiceAccountCredentials(serviceAccounts, next: credentials)
        self.underlyingCredentials = credentials
        self.configuration = configuration
        self.store = metadata
        self.blobStore = blobs
        self.policy = policy
        self.logger = logger
        self.smallBlobs = smallBlobs
        self.versionResponses = versionResponses
        self.images = images
        self.reclaimer = reclaimer
        self.maintenanceCounters = maintenanceCounters
        self.edge = EdgePolicy(configuration)
        self.inflation = inflation
        self.inlineAttempt = inlineAttempt
    }

    /// This service as one socket's thread runs it, reporting to `attempt`: the same caches, stores and policy,
    /// but every call that could block refuses before it is made (``metadata``, ``blobs``,
    /// ``authorize(_:)``). Verifying a token is CPU only; the HMAC keys a signed URL needs are in the store, so
    /// those go to a worker.
    func inlineView(_ attempt: InlineAttempt) -> ObjectService {
        ObjectService(
            configuration: configuration, metadata: store, blobs: blobStore, policy: policy,
            credentials: underlyingCredentials, logger: logger,
            smallBlobs: smallBlobs, versionResponses: versionResponses.nonWaiting(), images: images,
            reclaimer: reclaimer, maintenanceCounters: maintenanceCounters, inflation: inflation, inlineAttempt: attempt
        )
    }

    /// `scheme://host[:port]` for the links and upload URLs of an answer to `context` (``EdgePolicy/externalBase(_:)``).
    package func externalBase(_ context: RequestContext) -> String { edge.externalBase(context.head) }

    /// Throws `.notFound` for a bucket this server does not serve. The pipeline checks every bucket a route names
    /// (``RouteTarget/buckets``) before the handler runs, so operations on a route's bucket do not check again; buckets
    /// named elsewhere (a request body, an upload session) are checked where they are read.
    package func checkServed(_ bucket: BucketName) throws {
        if let served = configuration.buckets, !served.contains(bucket) {
            throw StorageError(.notFound, "Not Found. Bucket \(bucket) is not served here.")
        }
    }

    /// ``checkServed(_:)`` for every bucket `route` names. Without `--bucket` every bucket is served, and the route's
    /// list of buckets (an array per request) is not made.
    package func checkServed(_ route: Route) throws {
        guard configuration.buckets != nil else { return }
        for bucket in route.target.buckets { try checkServed(bucket) }
    }

    /// Throws GCS's 404 unless the bucket exists (it is served and was created).
    package func requireBucket(_ bucket: BucketName) throws {
        try checkServed(bucket)
        guard try metadata.bucket(bucket) != nil else { throw StorageError.noSuchBucket(bucket) }
    }

    /// Before an upload stores anything, on any API: a bucket that does not exist is a 404 unless uploads create
    /// buckets (emulator mode, as the Firebase emulator serves any bucket; the commit then creates it).
    package func checkUploadBucket(_ bucket: BucketName) throws {
        try checkServed(bucket)
        if !configuration.createBucketsOnUpload { try requireBucket(bucket) }
    }

    /// Decides access; admin credentials always pass. Throws `.permissionDenied` with the emulator's wording.
    /// An inline attempt records a decision that read more than the path (``InlineAttempt/Reads/decision``), and is
    /// refused when the policy could not answer without waiting.
    package func authorize(_ request: AccessRequest) throws {
        if request.principal?.isAdmin == true { return }
        let answer: AccessAnswer
        if let inlineAttempt {
            guard let answered = policy.answerWithoutWaiting(request) else {
                throw inlineAttempt.wouldBlock("the access decision on \(request.bucket)/\(request.path)")
            }
            if !answered.byPathAlone { inlineAttempt.read(.decision) }
            answer = answered
        } else {
            answer = policy.answer(request)
        }
        guard answer.allowed else {
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
    package func readableObject(
        _ bucket: BucketName, _ name: ObjectName, context: RequestContext, generation: Int64? = nil
    )
        throws -> ObjectRecord
    {
        let record = try object(bucket, name, generation: generation)
        try authorize(
            AccessRequest(
                operation: .get, bucket: bucket, path: name.rawValue, principal: context.principal,
                resource: record, time: context.time))
        guard let record else { throw StorageError.objectNotFound(bucket, name) }
        return record
    }

    /// Gives an object its first download token if it has none (Firebase does this on the first v0 read; it bumps
    /// the metageneration).
    package func ensureDownloadToken(_ record: ObjectRecord, time: Timestamp) throws -> ObjectRecord {
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

    /// Decides an upload before any of its bytes is stored: `create` of `name` by `principal`, with the
    /// metadata and the size the request declares. What only the bytes can tell (their checksums, a size nobody
    /// declared) is unknown, so a rule that depends on it does not deny here; ``commitUpload`` decides again with
    /// the real values. Also refuses a declared size over `maxObjectSize` with 413.
    package func authorizeUploadStart(
        bucket: BucketName, name: ObjectName, fields: ObjectFields, declaredSize: Int64?, principal: Principal?,
        time: Timestamp
    ) throws {
        try checkUploadBucket(bucket)
        if let declaredSize { try checkObjectSize(declaredSize, "\(bucket)/\(name)") }
        guard principal?.isAdmin != true else { return }
        var request = AccessRequest(
            operation: .create, bucket: bucket, path: name.rawValue, principal: principal,
            resource: try object(bucket, name, generation: nil), proposedFields: fields,
            proposedSize: declaredSize, time: time)
        request.bytesKnown = false
        try authorize(request)
    }

    /// Who an upload counts against for per-caller quotas: the signed-in user, else the client's address; nil for
    /// the admin (not limited).
    func quotaCaller(_ principal: Principal?, peer: PeerAddress?) -> String? {
        if principal?.isAdmin == true { return nil }
        if let uid = principal?.uid { return "uid:" + uid }
        return "ip:" + (peer.map { "\($0)" } ?? "unknown")
    }

    /// What `caller` may still add to its open sessions: throws 429 when a new session (`opening`) would exceed the
    /// session count, or when the bytes they hold are at the quota; returns the bytes left.
    func pendingAllowance(_ caller: String, opening: Bool, time: Timestamp) throws -> Int64 {
        let since = Timestamp(microseconds: time.microseconds - configuration.sessionQuotaWindowSeconds * 1_000_000)
        let usage = try metadata.activeSessionUsage(caller: caller, updatedSince: since)
        if opening && usage.sessions >= configuration.maxSessionsPerCaller {
            throw StorageError(
                .tooManyRequests,
                "too many open upload sessions (\(usage.sessions)); finish or cancel some first, or wait for them to expire"
            )
        }
        let left = configuration.maxPendingBytesPerCaller - usage.bytes
        guard left > 0 else {
            throw StorageError(
                .tooManyRequests, "open upload sessions already hold \(usage.bytes) bytes; finish or cancel some first")
        }
        return left
    }

    /// Throws 413 for an object larger than the server accepts.
    package func checkObjectSize(_ size: Int64, _ object: @autoclosure () -> String) throws {
        guard size <= configuration.maxObjectSize else {
            throw StorageError(
                .payloadTooLarge,
                "\(object()) would be \(size) bytes; this server accepts objects up to \(configuration.maxObjectSize)")
        }
    }

    /// Makes an uploaded blob the live version of `name`: decides the write again against the live version — with
    /// `.securityRules`, a `create` with the proposed object (fields, size and checksums of the bytes received);
    /// with `.gcs`, the caller's `objects.create` (and `objects.delete` when a version is replaced) — and commits
    /// with that version pinned (see ``pinned(_:_:conditions:principal:check:write:)``), then deletes the replaced
    /// blob. With `sessionID` the commit also finalizes that resumable session, in the same transaction. `bucket` is
    /// served (a route's, or checked by the caller).
    package func commitUpload(
        bucket: BucketName, name: ObjectName, blob: IngestedBlob, fields: ObjectFields,
        conditions: Preconditions, principal: Principal?, access: WriteAccess = .securityRules, time: Timestamp,
        finalizing sessionID: String? = nil, createsBucket: Bool
    ) throws -> ObjectRecord {
        let summary = blob.summary
        let draft = ObjectDraft(
            bucket: bucket, name: name, blob: summary, blobID: blob.id, fields: fields, createsBucket: createsBucket,
            inlineBytes: blob.inlineBytes)
        let presets = images.presetTicket(bucket, name, contentType: fields.contentType, blob: blob.id, service: self)
        let stored: ObjectRecord
        do {
            let write = { (pins: Preconditions) in
                try self.commit(draft, conditions: pins, time: time, finalizing: sessionID)
            }
            let check = access.check(
                self,
                WriteAccess.Proposed(
                    bucket: bucket, name: name, fields: fields, blob: summary, principal: principal, time: time))
            if let check {
                stored = try pinned(bucket, name, conditions: conditions, principal: principal, check: check) {
                    try write($0)
                }
            } else {
                stored = try write(conditions)
            }
        } catch {
            presets.map(images.returnTicket)
            throw error
        }
        if let presets { images.queue(presets, for: stored, service: self) }
        return stored
    }

    /// Runs a rules-checked write so that the decision holds for the version it was made about:
    /// reads the live version, runs `check` on it (rules), checks the client's `conditions`, then runs `write`
    /// with those conditions plus the version's generation and metageneration pinned (generation 0: the object must
    /// still not exist). If another write got in between, the pinned precondition fails in the store's
    /// transaction and the whole sequence runs again on the new version, so two racing uploads cannot both pass a
    /// create-only rule. Admin writes are not rules-checked and go straight to `write` with the client's conditions.
    package func pinned<Result>(
        _ bucket: BucketName, _ name: ObjectName, conditions: Preconditions, principal: Principal?,
        check: (ObjectRecord?) throws -> Void, write: (Preconditions) throws -> Result
    ) throws -> Result {
        if principal?.isAdmin == true { return try write(conditions) }
        var attempts = 0
        while true {
            let existing = try object(bucket, name, generation: nil)
            try check(existing)
            try conditions.check(existing, describing: "\(bucket)/\(name)")
            var pins = conditions
            pins.ifGenerationMatch = existing?.generation ?? 0
            pins.ifMetagenerationMatch = existing?.metageneration
            do {
                return try write(pins)
            } catch let error as StorageError where error.code == .preconditionFailed {
                attempts += 1
                guard attempts < Self.pinnedAttempts else {
                    throw StorageError(
                        .unavailable, "\(bucket)/\(name) keeps changing under concurrent writes; try again",
                        cause: error)
                }
            }
        }
    }

    static let pinnedAttempts = 4

    /// The server acting for itself (preset thumbnails it derives): nothing is decided for it.
    package static let itself = Principal(
        scheme: "Bearer", credential: "", uid: nil, claimsJSON: "{}", isAdmin: true, verified: true)

    /// Makes `draft` live (the store creates the bucket if needed and checks `conditions` in its transaction), then
    /// releases the version it replaced.
    package func commit(
        _ draft: ObjectDraft, conditions: Preconditions, time: Timestamp, finalizing sessionID: String? = nil
    )
        throws -> ObjectRecord
    {
        try checkObjectSize(draft.blob.size, "\(draft.bucket)/\(draft.name)")
        let resource = try bucketResource(draft.bucket)
        var draft = draft
        draft.replacedSoftDeletion = Self.softDeletion(resource, at: time)
        let (stored, replaced) = try metadata.insertObject(
            draft, conditions: conditions.protecting(Self.protection(resource, at: time)), at: time,
            finalizing: sessionID)
        if let replaced, draft.replacedSoftDeletion == nil { release(replaced) }
        return stored
    }

    /// What stops a write from replacing or deleting a version of `bucket` now: holds and object retention on the
    /// version, and the bucket's retention policy. Every API's replace and delete passes it to the store.
    package func protection(_ bucket: BucketName, at time: Timestamp) throws -> Preconditions.Protection {
        Self.protection(try bucketResource(bucket), at: time)
    }

    package static func protection(_ resource: BucketResource?, at time: Timestamp) -> Preconditions.Protection {
        Preconditions.Protection(now: time, retentionSeconds: resource?.retentionPolicy?.period ?? 0)
    }

    /// How long a version that leaves `resource`'s bucket is kept restorable (GCS soft delete), or nil.
    package static func softDeletion(_ resource: BucketResource?, at time: Timestamp) -> SoftDeletion? {
        let keep = resource?.softDeleteSeconds ?? 0
        guard keep > 0 else { return nil }
        return SoftDeletion(at: time, hardDeleteAt: Timestamp(microseconds: time.microseconds + keep * 1_000_000))
    }

    /// Deletes the live version (or `generation`) with `conditions` and protection checked in the store, then
    /// releases its blob — or, in a bucket with a soft-delete policy, keeps it restorable for the policy's
    /// duration (GCS soft delete; the maintenance loop purges it after).
    @discardableResult
    package func deleteObject(
        _ bucket: BucketName, _ name: ObjectName, generation: Int64?, conditions: Preconditions, time: Timestamp
    ) throws -> ObjectRecord {
        let resource = try bucketResource(bucket)
        let softDeletion = Self.softDeletion(resource, at: time)
        let deleted = try metadata.deleteObject(
            bucket, name, generation: generation,
            conditions: conditions.protecting(Self.protection(resource, at: time)),
            softDeletion: softDeletion)
        if softDeletion == nil { release(deleted) }
        return deleted
    }

    /// Deletes the blob of a version the store has just replaced or deleted — unless anything still points to it
    /// (the bucket keeps it as a noncurrent version, or it is the new version's own blob), or the blob store cannot
    /// keep it readable for downloads already under way (then the collector deletes it after its grace period; the
    /// store has it on the garbage list). The deletion runs after the request answers (``BlobReclaimer``).
    package func release(_ version: ObjectRecord) {
        guard blobStore.readersSurviveDeletion else { return }
        discardBlobLater(version.blobID)
    }

    /// ``discardBlob(_:)`` after the current request has answered: for blobs a successful write freed, whose
    /// deletion the answer does not depend on.
    package func discardBlobLater(_ id: BlobID) {
        reclaimer.reclaim(id) { [self] in discardBlob($0) }
    }

    /// Deletes a blob nothing references any more (``collectBlob(_:registeredBefore:at:)`` with no cutoff). Failures
    /// are left to the collector.
    package func discardBlob(_ id: BlobID) {
        do {
            _ = try collectBlob(id, registeredBefore: nil, at: .now())
        } catch {
            logger.warning(
                "blob deletion deferred to the collector",
                metadata: ["silo.blob": id.rawValue, "silo.error": "\(error)"])
        }
    }

    /// The one way a blob's bytes are deleted, by requests and by the collector alike: the store hands the blob over
    /// first (``MetadataStore/claimGarbageBlob(_:registeredBefore:at:)``), in a transaction that excludes every
    /// commit of it on every node, so no path deletes the bytes of a version, a soft-deleted version, an active
    /// session, or an upload that is about to commit. Then the bytes go, then the store forgets the blob; a failure
    /// in between leaves the claim on the list for the next collection. True when the blob went.
    func collectBlob(_ id: BlobID, registeredBefore cutoff: Timestamp?, at time: Timestamp) throws -> Bool {
        guard try metadata.claimGarbageBlob(id, registeredBefore: cutoff, at: time) else { return false }
        try blobs.deleteBlob(id)
        try metadata.forgetBlob(id)
        return true
    }
}

/// Which access decision a write makes again when it commits, against the live version it would replace. The kit
/// knows Security Rules' (``securityRules``); an API with rules of its own brings them (GCS's IAM and ACLs are
/// SiloGCSAPI's).
package struct WriteAccess: Sendable {
    /// The write to decide.
    package struct Proposed {
        package var bucket: BucketName
        package var name: ObjectName
        package var fields: ObjectFields
        package var blob: BlobSummary
        package var principal: Principal?
        package var time: Timestamp
    }

    /// The check against the live version (nil when there is none), which throws to refuse; nil when nothing is
    /// decided for this write (an exempt caller), which then commits unpinned.
    package typealias Check = (_ existing: ObjectRecord?) throws -> Void

    package let check: @Sendable (_ service: ObjectService, _ write: Proposed) -> Check?

    package init(check: @escaping @Sendable (_ service: ObjectService, _ write: Proposed) -> Check?) {
        self.check = check
    }

    /// The v0 API's: Security Rules decide a `create` with the proposed object (an overwrite is a `create` with
    /// `resource` set, as the Firebase emulator decides it).
    package static let securityRules = WriteAccess { service, write in
        { existing in
            try service.authorize(
                AccessRequest(
                    operation: .create, bucket: write.bucket, path: write.name.rawValue, principal: write.principal,
                    resource: existing, proposedFields: write.fields, proposedBlob: write.blob, time: write.time))
        }
    }

    /// Every write refused: the rule for a session no API claims (``RouteGroup/commitAccess(_:)``).
    package static let refused = WriteAccess { _, write in
        { _ in throw StorageError(.permissionDenied, "no API decides writes to \(write.bucket)/\(write.name)") }
    }
}

extension StorageError {
    package static func objectNotFound(_ bucket: BucketName, _ name: ObjectName) -> StorageError {
        StorageError(.notFound, "Not Found. Object \(bucket)/\(name) does not exist.")
    }
}
