import SiloCore
import SiloHTTP
import SiloWire

/// GCS JSON API object operations (wire spec §6): get, media, patch, update, delete, list, copy, rewrite, compose.
struct GCSObjectRoutes {
    let service: ObjectService
    let download: DownloadResponder

    func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    func object(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD": return .respond(get(context, bucket, name))
        case "PATCH": return metadataWrite(context, bucket, name, replace: false)
        case "PUT": return metadataWrite(context, bucket, name, replace: true)
        case "DELETE": return .respond(run { try delete(context, bucket, name) })
        default:
            return .respond(Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported here")))
        }
    }

    private func get(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> HTTPResponse {
        let media = context.query["alt"] == "media" || context.head.rawPath.hasPrefix("/download/")
        do {
            try service.checkServed(bucket)
            let generation = try GCSConditions.generation(context.query)
            let lookup = {
                guard let record = try service.metadata.object(bucket, name, generation: generation) else {
                    throw StorageError(.notFound, "No such object: \(bucket)/\(name)")
                }
                try GCSConditions.checkRead(try GCSConditions.destination(context.query), record)
                return record
            }
            guard media else {
                let record = try lookup()
                let etag = "\"\(record.etag)\""
                if let match = context.headers["If-Match"], !DownloadResponder.matches(match, etag: etag) {
                    throw StorageError(.preconditionFailed, "If-Match: the etag of \(bucket)/\(name) differs")
                }
                if let match = context.headers["If-None-Match"], DownloadResponder.matches(match, etag: etag) {
                    throw StorageError(.notModified, "Not Modified")
                }
                return Reply.json(200, GCSJSON.object(record, base: context.externalBase))
            }
            return try download.respond(request: context.head, api: .gcs, lookup: lookup)
        } catch let error as StorageError where media && error.code == .notFound {
            // Media downloads answer 404 in plain text, as GCS does.
            return Reply.text(404, error.message)
        } catch {
            return Reply.gcsError(error)
        }
    }

    /// PATCH merges (null deletes); PUT replaces every writable field — except that download tokens survive unless
    /// the body names `firebaseStorageDownloadTokens`, so Firebase download URLs do not break on a GCS update.
    private func metadataWrite(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, replace: Bool)
        -> RequestDisposition
    {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { body in
                run {
                    try service.checkServed(bucket)
                    let changes = try MetadataChanges(json: JSONValue.parse(body.isEmpty ? Array("{}".utf8) : body))
                    let conditions = try GCSConditions.destination(context.query)
                    if let generation = try GCSConditions.generation(context.query),
                        try service.metadata.object(bucket, name, generation: nil)?.generation != generation
                    {
                        throw StorageError(.notFound, "No such object: \(bucket)/\(name)#\(generation)")
                    }
                    let record = try service.metadata.updateObject(
                        bucket, name, conditions: conditions, at: context.time
                    ) {
                        fields in
                        if replace {
                            let tokens = fields.downloadTokens
                            fields = ObjectFields()
                            fields.downloadTokens = tokens
                        }
                        try changes.apply(to: &fields)
                    }
                    return Reply.json(200, GCSJSON.object(record, base: context.externalBase))
                }
            })
    }

    private func delete(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> HTTPResponse {
        try service.checkServed(bucket)
        let deleted = try service.metadata.deleteObject(
            bucket, name, generation: try GCSConditions.generation(context.query),
            conditions: try GCSConditions.destination(context.query))
        service.release(deleted)
        return Reply.empty(204)
    }

    /// `/o/{object}/…`: ACLs, restore, moveTo.
    func sub(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, _ path: [String])
        -> RequestDisposition
    {
        .respond(
            Reply.gcsError(
                StorageError(.notFound, "Not Found: no \(path.joined(separator: "/").prefix(100)) on objects")))
    }

    // MARK: List

    func list(_ context: RequestContext, _ bucket: BucketName) -> HTTPResponse {
        run {
            try service.requireBucket(bucket)
            let q = context.query
            var query = GCSListing.Query()
            query.prefix = q["prefix"] ?? ""
            query.delimiter = q["delimiter"] ?? ""
            if let text = q["maxResults"] {
                guard let value = Int(text), value >= 1 else {
                    throw StorageError(
                        .invalidArgument, "maxResults must be a positive integer, not \(text.prefix(40))")
                }
                query.maxResults = min(value, 1000)
            }
            query.versions = q["versions"]?.lowercased() == "true"
            query.startOffset = q["startOffset"].flatMap { $0.isEmpty ? nil : $0 }
            query.endOffset = q["endOffset"].flatMap { $0.isEmpty ? nil : $0 }
            query.includeTrailingDelimiter = q["includeTrailingDelimiter"]?.lowercased() == "true"
            if let pattern = q["matchGlob"], !pattern.isEmpty {
                // GCS: a glob lists by names across segments; only `/` combines with it as a delimiter.
                if !query.delimiter.isEmpty && query.delimiter != "/" {
                    throw StorageError(.invalidArgument, "matchGlob can only be used with the delimiter '/'")
                }
                do { query.glob = try Glob(pattern) } catch {
                    throw StorageError(.invalidArgument, "invalid matchGlob pattern \(pattern.prefix(100))")
                }
            }
            if let token = q["pageToken"], !token.isEmpty {
                guard let decoded = Base64.decode(token) else {
                    throw StorageError(.invalidArgument, "invalid pageToken")
                }
                query.after = decoded
            }
            let page: GCSListing.Page
            do { page = try GCSListing(store: service.metadata).page(bucket, query) } catch is Glob.TooComplex {
                throw StorageError(.invalidArgument, "matchGlob pattern is too complex")
            }
            var o = JSONObject()
            o["kind"] = .string("storage#objects")
            if let next = page.nextToken { o["nextPageToken"] = .string(Base64.encodeURLSafe(next)) }
            if !page.prefixes.isEmpty { o["prefixes"] = .array(page.prefixes.map { .string($0) }) }
            if !page.items.isEmpty {
                o["items"] = .array(page.items.map { GCSJSON.object($0, base: context.externalBase) })
            }
            return Reply.json(200, .object(o))
        }
    }

    // MARK: Copy, rewrite, compose

    func copy(
        _ context: RequestContext, from source: (BucketName, ObjectName), to destination: (BucketName, ObjectName),
        rewrite: Bool
    ) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { body in
                run {
                    try service.checkServed(source.0)
                    try service.requireBucket(destination.0)
                    let changes = try body.isEmpty ? nil : UploadFields.parseChanges(body)
                    let generation = try GCSConditions.generation(context.query, "sourceGeneration")
                    guard let original = try service.metadata.object(source.0, source.1, generation: generation) else {
                        throw StorageError(.notFound, "No such object: \(source.0)/\(source.1)")
                    }
                    try GCSConditions.source(context.query).check(original, describing: "\(source.0)/\(source.1)")
                    var fields = original.fields
                    if let changes {
                        // A body that sets custom metadata replaces the source's, tokens included.
                        if changes.removeAllCustomMetadata || !changes.customMetadata.isEmpty {
                            fields.customMetadata = [:]
                            fields.downloadTokens = []
                        }
                        try changes.apply(to: &fields)
                    }
                    let record = try service.copyBytes(
                        of: [original], into: destination.0, destination.1, fields: fields,
                        conditions: try GCSConditions.destination(context.query), componentCount: nil,
                        time: context.time)
                    let resource = GCSJSON.object(record, base: context.externalBase)
                    guard rewrite else { return Reply.json(200, resource) }
                    return Reply.json(
                        200,
                        .object([
                            "kind": .string("storage#rewriteResponse"),
                            "totalBytesRewritten": .string(String(record.size)),
                            "objectSize": .string(String(record.size)),
                            "done": .bool(true), "resource": resource,
                        ]))
                }
            })
    }

    func compose(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { body in
                run {
                    try service.requireBucket(bucket)
                    guard case .object(let request) = try JSONValue.parse(body),
                        let sources = request["sourceObjects"]?.arrayValue, !sources.isEmpty
                    else { throw StorageError(.invalidArgument, "compose needs a non-empty sourceObjects list") }
                    guard sources.count <= 32 else {
                        throw StorageError(
                            .invalidArgument, "compose takes at most 32 source objects, not \(sources.count)")
                    }
                    var records: [ObjectRecord] = []
                    for source in sources {
                        guard let object = source.objectValue, let sourceName = object["name"]?.stringValue else {
                            throw StorageError(.invalidArgument, "each source object needs a name")
                        }
                        let name = try ObjectName(sourceName)
                        let generation = object["generation"]?.int64Value
                        guard let record = try service.metadata.object(bucket, name, generation: generation) else {
                            throw StorageError(.notFound, "No such object: \(bucket)/\(name)")
                        }
                        if let want = object["objectPreconditions"]?.objectValue?["ifGenerationMatch"]?.int64Value {
                            try Preconditions(ifGenerationMatch: want).check(record, describing: "\(bucket)/\(name)")
                        }
                        records.append(record)
                    }
                    var fields = ObjectFields()
                    if let destination = request["destination"] {
                        try MetadataChanges(json: destination).apply(to: &fields)
                    }
                    if fields.contentType == nil { fields.contentType = records[0].fields.contentType }
                    let record = try service.copyBytes(
                        of: records, into: bucket, name, fields: fields,
                        conditions: try GCSConditions.destination(context.query),
                        componentCount: records.reduce(0) { $0 + ($1.componentCount ?? 1) }, time: context.time)
                    return Reply.json(200, GCSJSON.object(record, base: context.externalBase))
                }
            })
    }
}

extension ObjectService {
    /// Writes the concatenated bytes of `sources` as a new version of `name` (copy, rewrite, compose), streaming
    /// through a bounded buffer and hashing on the way; commits with `conditions` checked in the transaction.
    func copyBytes(
        of sources: [ObjectRecord], into bucket: BucketName, _ name: ObjectName, fields: ObjectFields,
        conditions: Preconditions, componentCount: Int?, time: Timestamp
    ) throws -> ObjectRecord {
        let ingest = try BlobIngest(service: self, time: time)
        do {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { buffer.deallocate() }
            for source in sources {
                let reader = try blobs.openReader(source.blobID)
                var offset: Int64 = 0
                while offset < source.size {
                    let n = try reader.read(into: buffer, at: offset)
                    guard n > 0 else {
                        throw StorageError(.corrupt, "\(source.bucket)/\(source.name) is shorter than its metadata")
                    }
                    try ingest.write(UnsafeRawBufferPointer(rebasing: buffer[0..<min(n, Int(source.size - offset))]))
                    offset += Int64(n)
                }
            }
            let summary = try ingest.finish()
            try checkServed(bucket)
            let draft = ObjectDraft(
                bucket: bucket, name: name, blob: summary, blobID: ingest.blobID, fields: fields,
                componentCount: componentCount, createsBucket: false)
            return try commit(draft, conditions: conditions, time: Timestamp.now())
        } catch {
            ingest.discard()
            throw error
        }
    }
}
