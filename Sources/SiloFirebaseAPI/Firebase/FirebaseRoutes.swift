import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// The Firebase Storage v0 API: metadata, download, list, update, delete, tokens and the three
/// upload protocols.
struct FirebaseRoutes {
    let service: ObjectService
    let resumable: CommandResumable
    let download: DownloadResponder

    init(service: ObjectService, registry: SessionRegistry, sessionCommit: SessionCommit) {
        self.service = service
        self.resumable = CommandResumable(
            ResumableSessions(service: service, registry: registry, commit: sessionCommit))
        self.download = DownloadResponder(service: service)
    }

    /// Errors thrown here are answered by the pipeline in the v0 shape.
    func bucket(_ context: RequestContext, _ bucket: BucketName) throws -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD": return .respond(try list(context, bucket))
        case "POST", "PUT": return try upload(context, bucket, pathName: nil)
        case "DELETE" where context.query["name"] != nil:
            // pyrebase4 and firebase-rest-api delete by `?name=` on the bucket path; the emulator takes it too.
            return .respond(try delete(context, bucket, try ObjectName(context.query["name"] ?? "")))
        default: throw methodNotAllowed(context)
        }
    }

    /// Errors thrown here are answered by the pipeline in the v0 shape.
    func object(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD":
            return .respond(try get(context, bucket, name))
        case "PATCH":
            return update(context, bucket, name)
        case "PUT" where context.headers["X-HTTP-Method-Override"].map { equalsIgnoringCase($0, "PATCH") } == true:
            return update(context, bucket, name)
        case "POST" where context.query.contains("create_token") || context.query.contains("delete_token"):
            return .respond(try tokens(context, bucket, name))
        case "POST", "PUT":
            if context.method == "PUT" && !context.query.contains("upload_id") { throw methodNotAllowed(context) }
            return try upload(context, bucket, pathName: name)
        case "DELETE":
            return .respond(try delete(context, bucket, name))
        default:
            throw methodNotAllowed(context)
        }
    }

    /// Errors of a body's completion, after the pipeline has returned, in the v0 shape.
    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.firebaseError(error) }
    }

    private func methodNotAllowed(_ context: RequestContext) -> StorageError {
        StorageError(
            .invalidArgument, "method \(context.method) is not supported on \(context.head.rawPath.prefix(200))")
    }

    // MARK: Reads

    private func get(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> HTTPResponse {
        let wantsMedia = context.query["alt"] == "media"
        // Checked before the lookup; authorized below exactly as a download of the original.
        let thumbnail =
            wantsMedia
            ? try ThumbnailQuery.spec(context.query, bucket: bucket, settings: service.configuration.images) : nil
        // A download token in the URL is a bearer capability for that object: a valid one grants the read without
        // rules. A token that is not the object's grants nothing, and the request is decided by the rules with the
        // caller's own credentials, as the emulator does (pyrebase4 sends the ID token as `token=`): a revoked
        // token's URL then reads only what its caller may read anyway.
        if wantsMedia, let token = context.query["token"] {
            return try download.respond(context, thumbnail: thumbnail) {
                if let record = try service.object(bucket, name, generation: nil),
                    record.fields.downloadTokens.contains(token)
                {
                    return record
                }
                do {
                    return try service.readableObject(bucket, name, context: context)
                } catch let error as StorageError where error.code == .permissionDenied {
                    throw StorageError(
                        .permissionDenied, "Permission denied. The download token is not valid for \(bucket)/\(name).")
                }
            }
        }
        guard wantsMedia else {
            let record = try service.readableObject(bucket, name, context: context)
            let current = try service.ensureDownloadToken(record, time: context.time)
            return Reply.json(200, serialized: service.versionResponses.firebaseMetadata(current))
        }
        return try download.respond(context, thumbnail: thumbnail) {
            try service.ensureDownloadToken(
                try service.readableObject(bucket, name, context: context), time: context.time)
        }
    }

    private func list(_ context: RequestContext, _ bucket: BucketName) throws -> HTTPResponse {
        let prefix = context.query["prefix"] ?? ""
        let delimiter = context.query["delimiter"] ?? ""
        if !prefix.isEmpty && (!prefix.hasSuffix("/") || prefix.hasSuffix("//")) {
            throw StorageError(
                .invalidArgument, "The prefix parameter is required to be empty or ends with a single / character.")
        }
        var maxResults = 1000
        if let text = context.query["maxResults"] {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw StorageError(
                    .invalidArgument, "maxResults must be an integer from 1 to 1000, not \(text.prefix(40))")
            }
            maxResults = value
        }
        var startAfter: [UInt8]?
        if let token = context.query["pageToken"], !token.isEmpty {
            guard let decoded = Base64.decode(token), decoded.starts(with: Array(prefix.utf8)) else {
                throw StorageError(.invalidArgument, "invalid pageToken")
            }
            startAfter = decoded
        }
        let listPath = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        try service.authorize(
            AccessRequest(
                operation: .list, bucket: bucket, path: listPath, principal: context.principal, time: context.time))
        let page = try FirebaseListing.page(
            store: service.metadata, bucket: bucket, prefix: prefix, delimiter: delimiter,
            startAfter: startAfter, maxResults: maxResults)
        return Reply.json(
            200,
            FirebaseMetadata.listJSON(
                bucket: bucket, prefixes: page.prefixes, items: page.items,
                nextPageToken: page.cursor.map { Base64.encodeURLSafe($0) }))
    }

    // MARK: Writes

    private func update(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.firebaseError($0) }) { body in
                run {
                    let changes = try MetadataChanges(json: JSONValue.parse(body))
                    // The rules decide about the version they saw: its generation and metageneration are pinned.
                    let record = try service.pinned(bucket, name, conditions: .none, principal: context.principal) {
                        existing in
                        var proposed = existing?.fields ?? ObjectFields()
                        try changes.apply(to: &proposed)
                        try service.authorize(
                            AccessRequest(
                                operation: .update, bucket: bucket, path: name.rawValue, principal: context.principal,
                                resource: existing, proposedFields: proposed, proposedSize: existing?.size,
                                time: context.time))
                        guard existing != nil else { throw StorageError.objectNotFound(bucket, name) }
                    } write: { pins in
                        try service.metadata.updateObject(bucket, name, conditions: pins, at: context.time) {
                            fields in
                            let existing = fields
                            try changes.apply(to: &fields)
                            try MetadataChanges.checkCustomTime(
                                from: existing, to: fields, object: "\(bucket)/\(name)")
                        }
                    }
                    return Reply.json(200, FirebaseMetadata.json(record))
                }
            })
    }

    private func delete(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> HTTPResponse {
        _ = try service.pinned(bucket, name, conditions: .none, principal: context.principal) { existing in
            try service.authorize(
                AccessRequest(
                    operation: .delete, bucket: bucket, path: name.rawValue, principal: context.principal,
                    resource: existing, time: context.time))
            guard existing != nil else { throw StorageError.objectNotFound(bucket, name) }
        } write: { pins in
            try service.deleteObject(bucket, name, generation: nil, conditions: pins, time: context.time)
        }
        return Reply.empty(204)
    }

    /// `create_token=true` / `delete_token=T` (admin only).
    private func tokens(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> HTTPResponse {
        let create = context.query["create_token"]
        if let create, create != "true" {
            throw StorageError(.invalidArgument, "create_token must be 'true', not \(create.prefix(40))")
        }
        guard context.principal?.isAdmin == true else {
            throw StorageError(.permissionDenied, "Missing admin credentials.")
        }
        let removing = context.query["delete_token"]
        let record = try service.metadata.updateObject(bucket, name, conditions: .none, at: context.time) { fields in
            if create != nil { fields.downloadTokens.append(RandomID.uuid()) }
            if let removing {
                fields.downloadTokens.removeAll { $0 == removing }
                if fields.downloadTokens.isEmpty { fields.downloadTokens = [RandomID.uuid()] }
            }
            // Tokens count towards the 8 KiB of custom metadata, as in GCS.
            try fields.validate()
        }
        return Reply.json(200, FirebaseMetadata.json(record))
    }

    // MARK: Uploads

    /// Chooses the protocol as the emulator does: any X-Goog-Upload-Command (or protocol `resumable`) → resumable;
    /// protocol `multipart` → multipart; otherwise a media upload.
    private func upload(_ context: RequestContext, _ bucket: BucketName, pathName: ObjectName?) throws
        -> RequestDisposition
    {
        let headers = context.headers
        let commands = CommandResumable.commands(headers["X-Goog-Upload-Command"])
        let protocolName = headers["X-Goog-Upload-Protocol"]?.lowercased()
        if context.query.contains("upload_id") {
            return resumable.command(context, commands: commands, bucket: bucket, api: .firebase)
        }
        if !commands.isEmpty || protocolName == "resumable" {
            guard commands.contains("start") else {
                throw StorageError(
                    .invalidArgument, "resumable upload without upload_id needs X-Goog-Upload-Command: start")
            }
            return resumable.start(context, bucket: bucket, pathName: pathName)
        }
        if context.method == "PUT" { throw methodNotAllowed(context) }
        if protocolName == "multipart" { return try multipart(context, bucket, pathName: pathName) }
        return try media(context, bucket, pathName: pathName)
    }

    private func media(_ context: RequestContext, _ bucket: BucketName, pathName: ObjectName?) throws
        -> RequestDisposition
    {
        let name = try UploadFields.objectName(pathName: pathName, query: context.query)
        let fields = try UploadFields.firebase(
            nil, fallbackContentType: context.headers["Content-Type"], name: name)
        // Decided before the first byte is stored; again with the bytes at commit.
        try service.authorizeUploadStart(
            bucket: bucket, name: name, fields: fields, declaredSize: context.declaredBodyLength,
            principal: context.principal, time: context.time)
        let ingest = try BlobIngest(service: service, time: context.time)
        return .readBody(
            MediaUploadSink(ingest: ingest, fail: { Reply.firebaseError($0) }) { ingest, blob in
                let record = try service.commitUpload(
                    bucket: bucket, name: name, blob: blob,
                    fields: fields, conditions: .none, principal: context.principal, time: Timestamp.now(),
                    createsBucket: service.configuration.createBucketsOnUpload)
                return Reply.json(200, FirebaseMetadata.json(record))
            })
    }

    private func multipart(_ context: RequestContext, _ bucket: BucketName, pathName: ObjectName?) throws
        -> RequestDisposition
    {
        guard let boundary = MultipartParser.boundary(fromContentType: context.headers["Content-Type"]) else {
            throw StorageError(
                .invalidArgument, "Bad content type. Multipart uploads need Content-Type: multipart/related; boundary=…"
            )
        }
        try service.checkUploadBucket(bucket)
        return .readBody(
            MultipartUploadSink(
                boundary: boundary, maxMetadataBytes: service.configuration.maxJSONBodyBytes,
                maxObjectSize: service.configuration.maxObjectSize,
                makeIngest: { changes, mediaContentType in
                    // The metadata part is in: decided before the first media byte is stored.
                    let name = try UploadFields.objectName(pathName: pathName, query: context.query, json: changes)
                    let fields = try UploadFields.firebase(changes, fallbackContentType: mediaContentType, name: name)
                    try service.authorizeUploadStart(
                        bucket: bucket, name: name, fields: fields, declaredSize: nil, principal: context.principal,
                        time: context.time)
                    return try BlobIngest(service: service, time: context.time)
                }, fail: { Reply.firebaseError($0) }
            ) { parts in
                let name = try UploadFields.objectName(pathName: pathName, query: context.query, json: parts.changes)
                let fields = try UploadFields.firebase(
                    parts.changes, fallbackContentType: parts.mediaContentType, name: name)
                if service.configuration.strictV0Checksums {
                    try UploadChecks.verify(
                        parts.summary, md5: parts.changes?.md5Hash, crc32c: nil, object: "\(bucket)/\(name)")
                }
                let record = try service.commitUpload(
                    bucket: bucket, name: name, blob: parts.blob,
                    fields: fields, conditions: .none, principal: context.principal, time: Timestamp.now(),
                    createsBucket: service.configuration.createBucketsOnUpload)
                return Reply.json(200, FirebaseMetadata.json(record))
            })
    }
}
