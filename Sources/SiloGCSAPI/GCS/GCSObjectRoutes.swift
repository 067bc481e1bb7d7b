package import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// GCS JSON API object operations: get, media, patch, update, delete, list, copy, rewrite, compose.
struct GCSObjectRoutes {
    let service: ObjectService
    let download: DownloadResponder

    package func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    /// Errors thrown here are answered by the pipeline in the JSON API's shape.
    package func object(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws
        -> RequestDisposition
    {
        switch context.method {
        case "GET", "HEAD": return .respond(try get(context, bucket, name))
        case "PATCH": return metadataWrite(context, bucket, name, replace: false)
        case "PUT": return metadataWrite(context, bucket, name, replace: true)
        case "DELETE": return .respond(try delete(context, bucket, name))
        default:
            throw StorageError(.invalidArgument, "\(context.method) is not supported here")
        }
    }

    /// A read of the object's bytes rather than its metadata.
    static func isMediaRead(_ context: RequestContext) -> Bool {
        (context.method == "GET" || context.method == "HEAD")
            && (context.query["alt"] == "media" || context.head.rawPath.hasPrefix("/download/"))
    }

    /// A media read's 404 is plain text (``GCSJSONAPIErrorShape``).
    private func get(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> HTTPResponse {
        let media = Self.isMediaRead(context)
        let named = try GCSConditions.generation(context.query)
        if context.query["softDeleted"]?.lowercased() == "true" {
            guard !media else {
                throw StorageError(.invalidArgument, "Invalid argument: soft-deleted objects cannot be downloaded")
            }
            guard let generation = named else {
                throw StorageError(.invalidArgument, "Invalid argument: softDeleted=true needs a generation")
            }
            guard let found = try service.metadata.softDeletedObject(bucket, name, generation: generation) else {
                throw StorageError(.notFound, "No such soft-deleted object: \(bucket)/\(name)#\(generation)")
            }
            return Reply.json(200, service.gcsObject(found, context))
        }
        let generation = context.addressed(bucket, name, named: named)
        let lookup = {
            guard let record = try service.object(bucket, name, generation: generation) else {
                throw context.changed(
                    bucket, name, named: named, StorageError(.notFound, "No such object: \(bucket)/\(name)"))
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
            return Reply.json(200, service.gcsObject(record, context))
        }
        let thumbnail = try ThumbnailQuery.spec(context.query, bucket: bucket, settings: service.configuration.images)
        return try download.respond(context, api: .gcs, thumbnail: thumbnail, lookup: lookup)
    }

    /// PATCH merges (null deletes); PUT replaces every writable field — except that download tokens survive unless
    /// the body names `firebaseStorageDownloadTokens`, so Firebase download URLs do not break on a GCS update.
    private func metadataWrite(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, replace: Bool)
        -> RequestDisposition
    {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { body in
                run {
                    let changes = try MetadataChanges(json: JSONValue.parse(body.isEmpty ? Array("{}".utf8) : body))
                    let conditions = try GCSConditions.destination(context.query)
                    let resource = try service.bucketResource(bucket)
                    // Any generation, live or noncurrent, can have its metadata changed: the one named, else the
                    // one the access decision was about.
                    let named = try GCSConditions.generation(context.query)
                    // Changing the ACL (`acl` in the body, `predefinedAcl`) also needs `objects.setIamPolicy`, decided
                    // on the version being changed, in the store's transaction.
                    let changesACL =
                        changes.extras.acl != nil || !(ObjectResource.predefinedACL(context.query) ?? "").isEmpty
                    let access = GCSAccess(service: service)
                    let record: ObjectRecord
                    do {
                        record = try service.metadata.updateObject(
                            bucket, name, generation: context.addressed(bucket, name, named: named),
                            conditions: conditions, at: context.time
                        ) {
                            fields in
                            if changesACL {
                                try access.checkACLChange(bucket, name, fields, context.principal, bucket: resource)
                            }
                            let existing = fields
                            if replace {
                                fields = ObjectFields()
                                fields.downloadTokens = existing.downloadTokens
                                fields.extras = existing.extras
                            }
                            try changes.apply(to: &fields)
                            try ObjectResource.apply(
                                changes.extras, to: &fields, existing: existing, bucket: resource, query: context.query,
                                principal: context.principal, replacing: replace, now: context.time,
                                object: "\(bucket)/\(name)")
                            try MetadataChanges.checkCustomTime(
                                from: existing, to: fields, object: "\(bucket)/\(name)")
                        }
                    } catch {
                        throw context.changed(bucket, name, named: named, error)
                    }
                    return Reply.json(200, service.gcsObject(record, context, bucket: resource))
                }
            })
    }

    private func delete(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> HTTPResponse {
        try service.deleteObject(
            bucket, name, generation: try GCSConditions.generation(context.query),
            conditions: try GCSConditions.destination(context.query), time: context.time)
        return Reply.empty(204)
    }

    /// `/o/{object}/…`: ACLs, restore, moveTo.
    package func sub(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, _ path: [String]) throws
        -> RequestDisposition
    {
        switch (context.method, path.count, path.first) {
        case ("POST", 1, "restore"):
            return .respond(try restore(context, bucket, name))
        case ("POST", 3, "moveTo") where path[1] == "o":
            return .respond(try move(context, bucket, from: name, to: try ObjectName(path[2])))
        case (_, 1, "acl"), (_, 2, "acl"):
            return GCSAccessControlRoutes(service: service).handle(
                context, bucket, .object(name), entity: path.count == 2 ? path[1] : nil)
        default:
            return .respond(
                Reply.gcsError(
                    StorageError(.notFound, "Not Found: no \(path.joined(separator: "/").prefix(100)) on objects")))
        }
    }

    /// `POST /b/{b}/o/{o}/restore?generation=G`: the soft-deleted version comes back live as a new generation,
    /// with `if*` conditions checked against the live version it replaces, which the caller must be allowed to
    /// replace then (``ObjectService/gcsPinned(_:_:conditions:principal:write:)``). As in GCS it takes the bucket's
    /// default object ACL, unless `copySourceAcl=true` (which the access table allows only to a caller who may set
    /// the soft-deleted version's ACL) keeps that version's own.
    private func restore(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) throws -> HTTPResponse {
        try service.requireBucket(bucket)
        guard let generation = try GCSConditions.generation(context.query) else {
            throw StorageError(.invalidArgument, "Invalid argument: restore needs a generation")
        }
        let resource = try service.bucketResource(bucket)
        let keepACL = context.query["copySourceAcl"]?.lowercased() == "true"
        let softDeletion = ObjectService.softDeletion(resource, at: context.time)
        let conditions = try GCSConditions.destination(context.query)
            .protecting(ObjectService.protection(resource, at: context.time))
        let (restored, replaced) = try service.gcsPinned(
            bucket, name, conditions: conditions, principal: context.principal
        ) { pins in
            // The live version it replaces is soft-deleted, as an overwrite's is (noncurrent if the bucket versions).
            try service.metadata.restoreObject(
                bucket, name, generation: generation, conditions: pins, at: context.time,
                replacedSoftDeletion: softDeletion
            ) { fields in
                guard !keepACL else { return }
                fields.extras.acl =
                    resource?.fields["defaultObjectAcl"] == nil
                    ? nil : ACLEntry.json(ProjectACL.defaultACL(resource, owner: fields.extras.owner))
            }
        }
        if let replaced, softDeletion == nil { service.release(replaced) }
        return Reply.json(200, service.gcsObject(restored, context, bucket: resource))
    }

    /// `GET /b/{b}/o?softDeleted=true`: soft-deleted versions by name and generation, `prefix` and paging only.
    private func listSoftDeleted(_ context: RequestContext, _ bucket: BucketName, maxResults: Int) throws
        -> HTTPResponse
    {
        let q = context.query
        for refused in ["delimiter", "matchGlob", "startOffset", "endOffset"] where !(q[refused] ?? "").isEmpty {
            throw StorageError(.invalidArgument, "Invalid argument: \(refused) cannot be used with softDeleted=true")
        }
        if q["versions"]?.lowercased() == "true" {
            throw StorageError(.invalidArgument, "Invalid argument: versions cannot be used with softDeleted=true")
        }
        var after: ObjectVersionKey?
        if let token = q["pageToken"], !token.isEmpty {
            guard let bytes = Base64.decode(token), let key = ObjectVersionKey(bytes: bytes) else {
                throw StorageError(.invalidArgument, "invalid pageToken")
            }
            after = key
        }
        let found = try service.metadata.softDeletedObjects(
            bucket, prefix: q["prefix"] ?? "", startAfter: after, limit: maxResults + 1)
        let page = found.prefix(maxResults)
        var o: JSONObject = ["kind": .string("storage#objects")]
        if found.count > maxResults, let last = page.last {
            o["nextPageToken"] = .string(Base64.encodeURLSafe(ObjectVersionKey(last.record).bytes))
        }
        if !page.isEmpty { o["items"] = .array(page.map { service.gcsObject($0, context) }) }
        return Reply.json(200, .object(o))
    }

    /// `POST /b/{b}/o/{source}/moveTo/o/{destination}`: an atomic rename in one store transaction, with
    /// `ifSource*` conditions on the source and `if*` on the destination; holds and retention protect both.
    private func move(
        _ context: RequestContext, _ bucket: BucketName, from source: ObjectName, to destination: ObjectName
    )
        throws -> HTTPResponse
    {
        try service.requireBucket(bucket)
        guard source != destination else {
            throw StorageError(.invalidArgument, "Invalid argument: moveTo needs a destination other than \(source)")
        }
        let protection = try service.protection(bucket, at: context.time)
        let sourceConditions = try GCSConditions.source(context.query).protecting(protection)
        // Whether the move replaces an object at the destination is decided as it commits.
        let (moved, replaced) = try service.gcsPinned(
            bucket, destination, conditions: try GCSConditions.destination(context.query).protecting(protection),
            principal: context.principal
        ) { pins in
            try service.metadata.moveObject(
                bucket, from: source, to: destination, sourceConditions: sourceConditions,
                destinationConditions: pins, at: context.time)
        }
        if let replaced { service.release(replaced) }
        return Reply.json(200, service.gcsObject(moved, context))
    }

    // MARK: List

    package func list(_ context: RequestContext, _ bucket: BucketName) -> HTTPResponse {
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
            if q["softDeleted"]?.lowercased() == "true" {
                return try listSoftDeleted(context, bucket, maxResults: query.maxResults)
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
            if let text = q["filter"], !text.isEmpty {
                guard let filter = ObjectContexts.filter(text) else {
                    throw StorageError(.invalidArgument, "Invalid argument: filter \(text.prefix(100))")
                }
                query.filter = filter
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
            var prefixes = page.prefixes
            let resource = try service.bucketResource(bucket)
            // Managed folders join the prefixes of the first page they would appear on, when asked for.
            if q["includeFoldersAsPrefixes"]?.lowercased() == "true", query.after == nil, let resource {
                let folders = ManagedFolders.prefixes(resource, prefix: query.prefix, delimiter: query.delimiter)
                prefixes = Array(Set(prefixes).union(folders)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            }
            var o = JSONObject()
            o["kind"] = .string("storage#objects")
            if let next = page.nextToken { o["nextPageToken"] = .string(Base64.encodeURLSafe(next)) }
            if !prefixes.isEmpty { o["prefixes"] = .array(prefixes.map { .string($0) }) }
            if !page.items.isEmpty {
                o["items"] = .array(page.items.map { service.gcsObject($0, context, bucket: resource) })
            }
            return Reply.json(200, .object(o))
        }
    }

    // MARK: Copy, rewrite, compose

    package func copy(
        _ context: RequestContext, from source: (BucketName, ObjectName), to destination: (BucketName, ObjectName),
        rewrite: Bool
    ) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { body in
                run {
                    try service.requireBucket(destination.0)
                    let changes = try body.isEmpty ? nil : UploadFields.parseChanges(body)
                    let named = try GCSConditions.generation(context.query, "sourceGeneration")
                    let original: ObjectRecord
                    do {
                        original = try service.copySource(
                            source.0, source.1, generation: context.addressed(source.0, source.1, named: named),
                            conditions: try GCSConditions.source(context.query))
                    } catch {
                        throw context.changed(source.0, source.1, named: named, error)
                    }
                    // The source's contexts go with the copy unless the body names others.
                    var fields = ObjectService.copiedFields(original)
                    if let changes {
                        // A body that sets custom metadata replaces the source's, tokens included.
                        if changes.removeAllCustomMetadata || !changes.customMetadata.isEmpty {
                            fields.customMetadata = [:]
                            fields.downloadTokens = []
                        }
                        try changes.apply(to: &fields)
                    }
                    let (record, resource) = try service.copy(
                        original, to: destination, fields: fields, extras: changes?.extras ?? ObjectExtrasChanges(),
                        predefinedACL: ObjectResource.predefinedACL(context.query), principal: context.principal,
                        conditions: try GCSConditions.destination(context.query), time: context.time)
                    let object = service.gcsObject(record, context, bucket: resource)
                    guard rewrite else { return Reply.json(200, object) }
                    return Reply.json(
                        200,
                        .object([
                            "kind": .string("storage#rewriteResponse"),
                            "totalBytesRewritten": .string(String(record.size)),
                            "objectSize": .string(String(record.size)),
                            "done": .bool(true), "resource": object,
                        ]))
                }
            })
    }

    package func compose(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
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
                    let access = GCSAccess(service: service)
                    let resource = try service.bucketResource(bucket)
                    let deletesSources = request["deleteSourceObjects"] == .bool(true)
                    var records: [ObjectRecord] = []
                    for source in sources {
                        guard let object = source.objectValue, let sourceName = object["name"]?.stringValue else {
                            throw StorageError(.invalidArgument, "each source object needs a name")
                        }
                        let name = try ObjectName(sourceName)
                        let generation = object["generation"]?.int64Value
                        let found = try service.object(bucket, name, generation: generation)
                        // Each source is read as the version it names, by that version's ACL or the bucket's
                        // grants (before a missing one is a 404: a caller who may not read learns nothing).
                        try access.check(.objectsGet, bucket, name, found, context.principal, bucket: resource)
                        if deletesSources {
                            try access.check(.objectsDelete, bucket, name, found, context.principal, bucket: resource)
                        }
                        guard let record = found else {
                            throw StorageError(.notFound, "No such object: \(bucket)/\(name)")
                        }
                        if let want = object["objectPreconditions"]?.objectValue?["ifGenerationMatch"]?.int64Value {
                            try Preconditions(ifGenerationMatch: want).check(record, describing: "\(bucket)/\(name)")
                        }
                        records.append(record)
                    }
                    // The destination has only the metadata the request gives it (no content type inherited).
                    var fields = ObjectFields()
                    let changes = try request["destination"].flatMap { try UploadFields.changes($0) }
                    try changes?.apply(to: &fields)
                    try ObjectResource.apply(
                        changes?.extras ?? ObjectExtrasChanges(), to: &fields, existing: nil, bucket: resource,
                        query: context.query, principal: context.principal, replacing: false, now: context.time,
                        object: "\(bucket)/\(name)")
                    let record = try service.compose(
                        records.map { ComposedSource(blobID: $0.blobID, size: $0.size, crc32c: $0.blob.crc32c) },
                        into: bucket, name, fields: fields, conditions: try GCSConditions.destination(context.query),
                        principal: context.principal,
                        componentCount: records.reduce(0) { $0 + ($1.componentCount ?? 1) },
                        time: context.time)
                    if deletesSources {
                        for source in records where source.name != name {
                            try service.deleteObject(
                                bucket, source.name, generation: source.generation,
                                conditions: Preconditions(ifGenerationMatch: source.generation), time: context.time)
                        }
                    }
                    return Reply.json(200, service.gcsObject(record, context, bucket: resource))
                }
            })
    }
}

extension ObjectService {
    /// Writes the concatenated bytes of `sources` as a new version of `name` (copy, rewrite), streaming through a
    /// bounded buffer and hashing on the way; commits with `conditions` checked in the transaction, once
    /// `principal` may still write `name` as it is then (``gcsPinned(_:_:conditions:principal:write:)``).
    package func copyBytes(
        of sources: [ObjectRecord], into bucket: BucketName, _ name: ObjectName, fields: ObjectFields,
        conditions: Preconditions, principal: Principal?, componentCount: Int?, time: Timestamp
    ) throws -> ObjectRecord {
        let ingest = try BlobIngest(service: self, time: time)
        do {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { buffer.deallocate() }
            for source in sources {
                let reader = try blobs.openBytes(of: source)
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
            let blob = try ingest.finish()
            try checkServed(bucket)
            let draft = ObjectDraft(
                bucket: bucket, name: name, blob: blob.summary, blobID: blob.id, fields: fields,
                componentCount: componentCount, createsBucket: false, inlineBytes: blob.inlineBytes)
            return try gcsPinned(bucket, name, conditions: conditions, principal: principal) { pins in
                try commit(draft, conditions: pins, time: Timestamp.now())
            }
        } catch {
            ingest.discard()
            throw error
        }
    }
}
