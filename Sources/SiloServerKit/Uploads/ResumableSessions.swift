package import SiloCore
package import SiloHTTP

/// The one resumable-upload engine: what a session is and does, whatever protocol a client speaks to it. It opens a
/// session (its empty blob registered as pending first, so a crash leaves garbage the collector takes, then the
/// row), finds one for a request, appends a chunk through ``ResumableChunkSink`` (one writer per session at a time;
/// the finalizing chunk commits once), cancels one, and reads back the object a finalized one made.
///
/// The protocols are adapters over it, each only reading its request and shaping its answers:
/// ``CommandResumable`` (`X-Goog-Upload-Command`: v0, and GCS JSON sessions the emulator's tests drive) and
/// ``RangeResumable`` (`Content-Range` and 308: the GCS JSON and XML session URLs). Where a session may be reached
/// is the adapters' rule (``find(_:bucket:accepts:name:)``).
package struct ResumableSessions {
    let service: ObjectService
    let registry: SessionRegistry
    let commit: SessionCommit

    package init(service: ObjectService, registry: SessionRegistry, commit: SessionCommit) {
        (self.service, self.registry, self.commit) = (service, registry, commit)
    }

    /// A new active session for `name`, stored; `more` sets what one protocol adds (expected hashes, the caller
    /// whose open sessions are counted).
    package func open(
        _ bucket: BucketName, _ name: ObjectName, fields: ObjectFields, declaredSize: Int64?,
        conditions: Preconditions = .none, context: RequestContext, api: UploadSession.API,
        _ more: (inout UploadSession) -> Void = { _ in }
    ) throws -> UploadSession {
        let blobID = BlobID.random()
        try service.metadata.registerPendingBlob(blobID, at: context.time)
        try service.blobs.makeWriter(blobID, at: 0).close()
        var session = UploadSession(
            id: RandomID.sessionID(), bucket: bucket, name: name, fields: fields, declaredSize: declaredSize,
            blobID: blobID, conditions: conditions, starter: context.principal, created: context.time, api: api)
        more(&session)
        try service.metadata.insertSession(session)
        return session
    }

    /// The session `id` names, if it belongs to `bucket`, was started through one of the APIs in `accepts`, and
    /// (given `name`) is that object's: anything else is not found, so a session answers only where it was opened.
    package func find(_ id: String?, bucket: BucketName, accepts: Set<UploadSession.API>, name: ObjectName? = nil)
        throws -> UploadSession
    {
        guard let id, !id.isEmpty else { throw StorageError(.invalidArgument, "missing upload_id") }
        guard let session = try service.metadata.session(id: id), session.bucket == bucket,
            accepts.contains(session.api), name == nil || session.name == name
        else { throw StorageError(.notFound, "Not Found. No upload session \(id.prefix(64)).") }
        return session
    }

    /// The body of the request as the session's next bytes: `resent` leading bytes it already has are dropped,
    /// `total` (when the request states it) becomes the declared size, and `finalize` commits the object once the
    /// bytes are in. `answer` shapes the outcome. `session` is what the protocol read to decide the request's offset;
    /// throws `.unavailable` while another request writes the session, or when one wrote it since that read (the
    /// client retries, and its next request is decided on what is stored).
    package func append(
        _ session: UploadSession, total: Int64? = nil, finalize: Bool, resent: Int64,
        answer: @escaping (Result<ResumableChunkSink.Outcome, StorageError>) -> HTTPResponse
    ) throws -> ResumableChunkSink {
        guard registry.tryClaim(session.id) else {
            throw StorageError(.unavailable, "another request is writing to upload session \(session.id)")
        }
        do {
            // Read again under the claim: a chunk that finished between the protocol's read and the claim moved the
            // offset, and a writer opened at the old one would truncate the bytes that chunk made durable.
            guard var current = try service.metadata.session(id: session.id), current.state == .active,
                current.received == session.received
            else {
                throw StorageError(
                    .unavailable, "upload session \(session.id) changed while this request waited; ask its status")
            }
            if let total, current.declaredSize != total {
                current = try service.metadata.updateSession(id: current.id) { $0.declaredSize = total }
            }
            return try ResumableChunkSink(
                service: service, registry: registry, commit: commit, session: current, finalize: finalize,
                resent: resent, respond: answer)
        } catch {
            registry.release(session.id)
            throw error
        }
    }

    /// Cancels an active session and lets its blob go; returns it as stored. Decided on the stored session, not on
    /// `session`: one that finished meanwhile (its blob may be the object's now) is refused, and left as it is.
    package func cancel(_ session: UploadSession) throws -> UploadSession {
        let cancelled = try service.metadata.updateSession(id: session.id) { stored in
            guard stored.state == .active else {
                throw StorageError(.invalidArgument, "upload session \(session.id) is already final")
            }
            stored.state = .cancelled
            stored.updated = Timestamp.now()
        }
        registry.forget(session.id)
        service.discardBlob(session.blobID)
        return cancelled
    }

    /// The version a finalized session made, as any later request on it answers: that generation, or (`orLive`,
    /// v0's answer) the live version once it is gone.
    package func result(_ session: UploadSession, orLive: Bool) throws -> ObjectRecord {
        guard let generation = session.resultGeneration,
            let object = try service.object(session.bucket, session.name, generation: generation)
                ?? (orLive ? service.object(session.bucket, session.name, generation: nil) : nil)
        else { throw StorageError.objectNotFound(session.bucket, session.name) }
        return object
    }
}
