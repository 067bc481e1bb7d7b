package import SiloCore
import SiloHTTP
import SiloServerKit
package import SiloWire

/// `/upload/storage/v1/b/{bucket}/o`: media, multipart and resumable uploads of the GCS JSON API,
/// with preconditions and client checksums checked at commit.
struct GCSUploads {
    let service: ObjectService
    /// The resumable engine, and its two protocols on the session URL.
    let sessions: ResumableSessions
    let commandResumable: CommandResumable
    let rangeResumable: RangeResumable

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
            return rangeResumable.handle(context, bucket, face: .json(service, context))
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
        let live = try service.object(bucket, name, generation: nil)
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
                    let fields = try fields(
                        changes, fallbackContentType: context.headers["X-Upload-Content-Type"], context, bucket, name)
                    let session = try sessions.open(
                        bucket, name, fields: fields, declaredSize: declared, conditions: conditions,
                        context: context, api: .gcs
                    ) { session in
                        session.expectedMD5 = changes?.md5Hash
                        session.expectedCRC32C = changes?.crc32c
                    }
                    let location =
                        "\(service.externalBase(context))/upload/storage/v1/b/\(PercentCoding.encodeComponent(bucket.rawValue))/o"
                        + "?uploadType=resumable&name=\(PercentCoding.encodeComponent(name.rawValue))&upload_id=\(session.id)"
                    return Reply.empty(200, headers: ["Location": location, "X-GUploader-UploadID": session.id])
                } catch {
                    return Reply.gcsError(error)
                }
            })
    }
}

extension ResumableFace {
    /// The JSON API's upload URL (which also takes v0 sessions, as it always has).
    static func json(_ service: ObjectService, _ context: RequestContext) -> ResumableFace {
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
