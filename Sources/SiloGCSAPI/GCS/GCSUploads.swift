package import SiloCore
import SiloHTTP
import SiloServerKit
package import SiloWire

/// `/upload/storage/v1/b/{bucket}/o`: media, multipart and resumable uploads of the GCS JSON API,
/// with preconditions and client checksums checked at commit.
struct GCSUploads {
    let service: ObjectService
    let registry: SessionRegistry
    let commandResumable: CommandResumable

    package func handle(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        // Production GCS never creates a bucket on upload; emulator mode does, as for v0 uploads. Decided before the
        // body is read.
        do { try service.checkUploadBucket(bucket) } catch { return .respond(Reply.gcsError(error)) }
        if context.query.contains("upload_id") {
            // Both flavours on the session URL: X-Goog-Upload-Command means the v0 protocol (the emulator's own
            // tests send it), otherwise Content-Range semantics.
            if context.headers["X-Goog-Upload-Command"] != nil {
                return commandResumable.command(
                    context, commands: CommandResumable.commands(context.headers["X-Goog-Upload-Command"]),
                    bucket: bucket, api: .gcs)
            }
            return session(context, bucket, face: .json(service, context))
        }
        guard context.method == "POST" else {
            return .respond(Reply.gcsError(StorageError(.invalidArgument, "uploads are POST requests")))
        }
        let uploadType =
            context.query["uploadType"] ?? context.headers["X-Goog-Upload-Protocol"]?.lowercased() ?? "media"
        switch uploadType {
        case "media": return media(context, bucket)
        case "multipart": return multipart(context, bucket)
        case "resumable": return start(context, bucket)
        default:
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "unknown uploadType \(uploadType.prefix(40))")))
        }
    }

    /// Fields of a GCS upload: the JSON's, content type from JSON, else the protocol's header, else octet-stream.
    /// Unlike v0 uploads, no download token and no content disposition are invented.
    /// The GCS-only keys (holds, ACL, retention, contexts) are applied as to a new object of `bucket`.
    /// The `contentEncoding` query parameter (media, multipart, and the request that starts a resumable upload) sets
    /// the stored encoding as the metadata's `contentEncoding` would, and wins over it, as on GCS.
    package func fields(
        _ changes: MetadataChanges?, fallbackContentType: String?, _ context: RequestContext, _ bucket: BucketName,
        _ name: ObjectName
    ) throws -> ObjectFields {
        var fields = try service.newObjectFields(
            changes, fallbackContentType: fallbackContentType, bucket, name,
            predefinedACL: ObjectResource.predefinedACL(context.query), principal: context.principal,
            time: context.time)
        if let encoding = context.query["contentEncoding"], !encoding.isEmpty {
            fields.contentEncoding = encoding
            try fields.validate()
        }
        return fields
    }

    /// Whether the caller may write `name` as it is now (`objects.create`, and `objects.delete` when it replaces a
    /// live object): for a name the request's body gives, once the body names it; the commit decides again.
    private func checkWrite(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws {
        let access = GCSAccess(service: service)
        guard !access.exempts(context.principal) else { return }
        let live = try service.metadata.object(bucket, name, generation: nil)
        if let refusal = access.writeRefusal(bucket, name, replacing: live, context.principal) { throw refusal }
    }

    private func commit(
        _ context: RequestContext, bucket: BucketName, name: ObjectName, blob: IngestedBlob,
        changes: MetadataChanges?, fallbackContentType: String?
    ) throws -> HTTPResponse {
        try UploadChecks.verify(
            blob.summary, md5: changes?.md5Hash, crc32c: changes?.crc32c, object: "\(bucket)/\(name)")
        let record = try service.commitUpload(
            bucket: bucket, name: name, blob: blob,
            fields: try fields(changes, fallbackContentType: fallbackContentType, context, bucket, name),
            conditions: try GCSConditions.destination(context.query), principal: context.principal, access: .gcs,
            time: Timestamp.now(), createsBucket: service.configuration.createBucketsOnUpload)
        return Reply.json(200, service.gcsObject(record, context))
    }

    private func media(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        do {
            let name = try UploadFields.objectName(pathName: nil, query: context.query)
            _ = try GCSConditions.destination(context.query)
            if let declared = context.declaredBodyLength { try service.checkObjectSize(declared, "\(bucket)/\(name)") }
            let ingest = try BlobIngest(service: service, time: context.time)
            return .readBody(
                MediaUploadSink(ingest: ingest, fail: { Reply.gcsError($0) }) { _, blob in
                    try commit(
                        context, bucket: bucket, name: name, blob: blob, changes: nil,
                        fallbackContentType: context.headers["Content-Type"])
                })
        } catch {
            return .respond(Reply.gcsError(error))
        }
    }

    private func multipart(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        guard let boundary = MultipartParser.boundary(fromContentType: context.headers["Content-Type"]) else {
            return .respond(
                Reply.gcsError(
                    StorageError(.invalidArgument, "Bad content type. Expected multipart/related with a boundary.")))
        }
        return .readBody(
            MultipartUploadSink(
                boundary: boundary, maxMetadataBytes: service.configuration.maxJSONBodyBytes,
                maxObjectSize: service.configuration.maxObjectSize,
                makeIngest: { changes, _ in
                    // The name may be in the metadata part: whether the upload replaces something is decided once it
                    // is known, before the first media byte, and again at commit.
                    try checkWrite(
                        context, bucket, UploadFields.objectName(pathName: nil, query: context.query, json: changes))
                    return try BlobIngest(service: service, time: context.time)
                },
                fail: { Reply.gcsError($0) }
            ) { parts in
                let name = try UploadFields.objectName(pathName: nil, query: context.query, json: parts.changes)
                return try commit(
                    context, bucket: bucket, name: name, blob: parts.blob,
                    changes: parts.changes, fallbackContentType: parts.mediaContentType)
            })
    }

    private func start(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { body in
                do {
                    let changes = try UploadFields.parseChanges(body)
                    let name = try UploadFields.objectName(pathName: nil, query: context.query, json: changes)
                    let conditions = try GCSConditions.destination(context.query)
                    try checkWrite(context, bucket, name)
                    var declared: Int64?
                    if let text = context.headers["X-Upload-Content-Length"] {
                        guard let value = Int64(text), value >= 0 else {
                            throw StorageError(.invalidArgument, "invalid X-Upload-Content-Length \(text.prefix(40))")
                        }
                        declared = value
                        try service.checkObjectSize(value, "\(bucket)/\(name)")
                    }
                    let blobID = BlobID.random()
                    try service.metadata.registerPendingBlob(blobID, at: context.time)
                    try service.blobs.makeWriter(blobID, at: 0).close()
                    var session = UploadSession(
                        id: RandomID.sessionID(), bucket: bucket, name: name,
                        fields: try fields(
                            changes, fallbackContentType: context.headers["X-Upload-Content-Type"], context, bucket,
                            name),
                        declaredSize: declared, blobID: blobID, conditions: conditions, starter: context.principal,
                        created: context.time, api: .gcs)
                    session.expectedMD5 = changes?.md5Hash
                    session.expectedCRC32C = changes?.crc32c
                    try service.metadata.insertSession(session)
                    let location =
                        "\(service.externalBase(context))/upload/storage/v1/b/\(PercentCoding.encodeComponent(bucket.rawValue))/o"
                        + "?uploadType=resumable&name=\(PercentCoding.encodeComponent(name.rawValue))&upload_id=\(session.id)"
                    return Reply.empty(200, headers: ["Location": location, "X-GUploader-UploadID": session.id])
                } catch {
                    return Reply.gcsError(error)
                }
            })
    }

    /// The `Content-Range` / 308 protocol on the session URL: one engine, answering in the shape of `face` (the
    /// JSON API's upload URL, the XML API's session URI). With `name`, the session must be that object's.
    package func session(_ context: RequestContext, _ bucket: BucketName, name: ObjectName? = nil, face: ResumableFace)
        -> RequestDisposition
    {
        guard let id = context.query["upload_id"], !id.isEmpty else {
            return .respond(face.error(StorageError(.invalidArgument, "missing upload_id")))
        }
        do {
            guard let session = try service.metadata.session(id: id), session.bucket == bucket,
                face.accepts.contains(session.api), name == nil || session.name == name
            else {
                throw StorageError(.notFound, "No such upload session \(id.prefix(64))")
            }
            if context.method == "DELETE" { return .respond(cancel(session, face)) }
            switch session.state {
            case .finalized: return .respond(finalAnswer(context, session, face))
            case .cancelled: throw StorageError(.notFound, "upload session \(id) was cancelled")
            case .failed:
                return .respond(face.refused(session.failureStatus ?? 400, session.failureMessage ?? "upload failed"))
            case .active: break
            }
            let length = Int64(context.headers["Content-Length"] ?? "0") ?? 0
            guard let header = context.headers["Content-Range"] else {
                // No Content-Range: the single-request form GCS documents — the body is the whole object (empty
                // for an empty object), finalized with it (gcloud-aio-storage, firebase-tools' conformance tests).
                guard session.received == 0 else {
                    throw StorageError(
                        .invalidArgument,
                        "a request without Content-Range carries the whole object; this session already has "
                            + "\(session.received) bytes")
                }
                // A chunked body's size is known when it ends: the finalize checks it against any declared size.
                let whole = context.declaredBodyLength
                if let whole, let declared = session.declaredSize, declared != whole {
                    throw StorageError(.invalidArgument, "the body has \(whole) bytes; the upload declared \(declared)")
                }
                return chunk(context, session, total: whole, finalize: true, face)
            }
            let range = try ContentRange(header)
            let total = range.total ?? session.declaredSize
            if let known = range.total, let declared = session.declaredSize, known != declared {
                throw StorageError(
                    .invalidArgument, "Content-Range total \(known) differs from the declared \(declared)")
            }
            guard let first = range.first else {
                // A status query (`bytes */*` or `bytes */N`); with every byte of a known total present it is the
                // final empty request of an upload whose length was a multiple of the chunk size.
                guard length == 0 else { throw StorageError(.invalidArgument, "a status query has no body") }
                if let total, total == session.received {
                    return chunk(context, session, total: total, finalize: true, face)
                }
                return .respond(incomplete(session.received, context))
            }
            // `bytes N-*/…` (Node streams): the body's length says where the chunk ends.
            let last = range.last ?? first + length - 1
            guard first <= session.received else {
                // A gap: tell the client what is persisted so it resynchronises (idempotent by offset).
                return .respond(incomplete(session.received, context))
            }
            guard last - first + 1 == length, length > 0 || total == first else {
                throw StorageError(
                    .invalidArgument, "Content-Range covers \(last - first + 1) bytes but the body has \(length)")
            }
            if let known = total, last + 1 > known {
                throw StorageError(.invalidArgument, "Content-Range ends past the total size \(known)")
            }
            // A chunk resent from before the persisted offset (a client retrying a chunk whose answer it lost): GCS
            // ignores the bytes it has and takes the rest. The request that states the total completes the upload
            // once every byte is there, even when all of its own bytes were there already.
            let resent = min(session.received - first, length)
            let complete = total.map { max(last + 1, session.received) == $0 } ?? false
            guard resent < length || complete else { return .respond(incomplete(session.received, context)) }
            return chunk(context, session, total: total, finalize: complete, resent: resent, face)
        } catch {
            return .respond(face.error(error))
        }
    }

    private func chunk(
        _ context: RequestContext, _ session: UploadSession, total: Int64?, finalize: Bool, resent: Int64 = 0,
        _ face: ResumableFace
    ) -> RequestDisposition {
        var session = session
        do {
            if let total, session.declaredSize != total {
                session = try service.metadata.updateSession(id: session.id) { $0.declaredSize = total }
            }
        } catch {
            return .respond(face.error(error))
        }
        guard registry.tryClaim(session.id) else {
            return .respond(face.error(StorageError(.unavailable, "another request is writing to this upload session")))
        }
        do {
            let sink = try ResumableChunkSink(
                service: service, registry: registry, commit: commandResumable.sessionCommit, session: session,
                finalize: finalize, resent: resent
            ) {
                result in
                switch result {
                case .success(let outcome):
                    if let object = outcome.object { return face.object(object) }
                    return incomplete(outcome.session.received, context)
                case .failure(let error): return face.error(error)
                }
            }
            return .readBody(sink)
        } catch {
            registry.release(session.id)
            return .respond(face.error(error))
        }
    }

    /// 308 with `Range: bytes=0-N` for what is persisted (no Range when nothing is). A client that sent
    /// `X-GUploader-No-308: yes` (Google's Go libraries: rclone, whose HTTP stack takes a 308 for a redirect) gets
    /// GCS's answer to it instead: 200 with `X-Http-Status-Code-Override: 308`, the same headers otherwise.
    private func incomplete(_ received: Int64, _ context: RequestContext) -> HTTPResponse {
        var headers = HTTPHeaders()
        if received > 0 { headers.set("Range", "bytes=0-\(received - 1)") }
        headers.set("Content-Length", "0")
        guard context.headers["X-GUploader-No-308"]?.lowercased() == "yes" else {
            return Reply.empty(308, headers: headers)
        }
        headers.set("X-Http-Status-Code-Override", "308")
        return Reply.empty(200, headers: headers)
    }

    private func finalAnswer(_ context: RequestContext, _ session: UploadSession, _ face: ResumableFace)
        -> HTTPResponse
    {
        do {
            guard let generation = session.resultGeneration,
                let object = try service.metadata.object(session.bucket, session.name, generation: generation)
            else { throw StorageError(.notFound, "No such object: \(session.bucket)/\(session.name)") }
            return face.object(object)
        } catch {
            return face.error(error)
        }
    }

    /// `DELETE {session}`: GCS answers 499 (client closed request) for a cancelled upload.
    private func cancel(_ session: UploadSession, _ face: ResumableFace) -> HTTPResponse {
        guard session.state == .active else { return Reply.empty(499) }
        do {
            _ = try service.metadata.updateSession(id: session.id) {
                $0.state = .cancelled
                $0.updated = Timestamp.now()
            }
            registry.forget(session.id)
            service.discardBlob(session.blobID)
            return Reply.empty(499)
        } catch {
            return face.error(error)
        }
    }
}

/// How one API answers on a `Content-Range` resumable session; ``GCSUploads/session(_:_:name:face:)`` is the one
/// engine behind both faces.
struct ResumableFace {
    /// The sessions this face serves: one started through another API is not found here.
    var accepts: Set<UploadSession.API>
    var error: (any Error) -> HTTPResponse
    /// The answer of the request that finalized, and of any later request on the finalized session.
    var object: (ObjectRecord) -> HTTPResponse
    /// The refusal of a failed finalize, repeated: its status and message.
    var refused: (_ status: Int, _ message: String) -> HTTPResponse

    /// The JSON API's upload URL (which also takes v0 sessions, as it always has).
    package static func json(_ service: ObjectService, _ context: RequestContext) -> ResumableFace {
        ResumableFace(
            accepts: [.gcs, .firebase], error: { Reply.gcsError($0) },
            object: { Reply.json(200, service.gcsObject($0, context)) },
            refused: { status, message in Reply.json(status, GCSJSON.error(status: status, message: message)) })
    }
}

extension ObjectService {
    /// The fields of a new object that GCS's APIs upload (the JSON API's metadata body, the XML API's headers):
    /// the client's, content type from them, else `fallbackContentType`, else octet-stream, and the GCS-only keys
    /// applied as to a new object of `bucket`, with `predefinedACL` if given.
    package func newObjectFields(
        _ changes: MetadataChanges?, fallbackContentType: String?, _ bucket: BucketName, _ name: ObjectName,
        predefinedACL: String?, principal: Principal?, time: Timestamp
    ) throws -> ObjectFields {
        var fields = ObjectFields()
        try changes?.apply(to: &fields)
        if fields.contentType == nil {
            fields.contentType = fallbackContentType.flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
        }
        try ObjectResource.apply(
            changes?.extras ?? ObjectExtrasChanges(), to: &fields, existing: nil, bucket: try bucketResource(bucket),
            predefinedACL: predefinedACL, overrideUnlockedRetention: false, principal: principal, replacing: false,
            now: time, object: "\(bucket)/\(name)")
        try fields.validate()
        return fields
    }
}
