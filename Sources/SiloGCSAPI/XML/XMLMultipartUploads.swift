import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// The XML API's multipart uploads (as google-cloud-storage's `transfer_manager.upload_chunks_concurrently` and Rust's
/// object_store send them): initiate (`POST ?uploads`), upload a part (`PUT ?partNumber=&uploadId=`), list parts
/// (`GET ?uploadId=`), complete (`POST ?uploadId=`), abort (`DELETE ?uploadId=`), and a bucket's uploads in progress
/// (`GET /{bucket}?uploads`).
///
/// State lives in the metadata store as upload sessions, so it survives restarts like resumable sessions do: the
/// upload is one session (the object's metadata and preconditions), each part another (its blob, size and
/// checksums; ids in ``XMLMultipartIDs``). An active session keeps its blob from the collector; maintenance expires
/// an upload untouched for the session lifetime together with its parts. Completion composes the parts inside the
/// blob store (``ObjectService/compose(_:into:_:fields:conditions:componentCount:time:finalizing:)``), combines their
/// CRC32Cs and finalizes the upload in the commit's transaction, then drops every part.
struct XMLMultipartUploads {
    let service: ObjectService
    let registry: SessionRegistry

    // MARK: Initiate

    package func initiate(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> HTTPResponse {
        run {
            let fields = try XMLObjectHeaders.fields(context, service: service, bucket: bucket, name: name)
            let conditions = try XMLObjectHeaders.conditions(context.headers)
            // Refused now if it cannot succeed; checked again in the completion's transaction.
            try conditions.check(
                try service.object(bucket, name, generation: nil), describing: "\(bucket)/\(name)")
            let caller = XMLMultipartIDs.caller(bucket)
            let since = Timestamp(
                microseconds: context.time.microseconds - service.configuration.sessionQuotaWindowSeconds * 1_000_000)
            let open = try service.metadata.activeSessionUsage(caller: caller, updatedSince: since).sessions
            guard open < service.configuration.maxMultipartUploadsPerBucket else {
                throw StorageError(
                    .tooManyRequests,
                    "bucket \(bucket) has \(open) multipart uploads in progress; complete or abort some first")
            }
            let uploadID = RandomID.sessionID()
            // The upload's own blob id is never written: the parts hold the bytes, and completion composes them
            // into a blob of its own.
            var upload = UploadSession(
                id: XMLMultipartIDs.upload(bucket, uploadID), bucket: bucket, name: name, fields: fields,
                declaredSize: nil, blobID: .random(), conditions: conditions, created: context.time,
                api: .xmlMultipart)
            upload.caller = caller
            try service.metadata.insertSession(upload)
            return XMLMultipartBodies.initiated(bucket, name, uploadID: uploadID)
        }
    }

    // MARK: Parts

    package func uploadPart(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, uploadID: String)
        -> RequestDisposition
    {
        do {
            guard let text = context.query["partNumber"], let number = Int(text),
                (1...XMLMultipartLimits.maxPartNumber).contains(number)
            else {
                throw StorageError(
                    .invalidArgument,
                    "partNumber must be an integer from 1 to \(XMLMultipartLimits.maxPartNumber), not "
                        + (context.query["partNumber"]?.prefix(20) ?? "none"))
            }
            let upload = try activeUpload(bucket, name, uploadID)
            try checkKey(context.headers, upload)
            let digests: XMLObjectHeaders.Digests
            do { digests = try XMLObjectHeaders.Digests(context.headers) } catch {
                return .respond(Reply.xmlError(error, code: XMLErrorCode.invalidDigest))
            }
            if let declared = context.declaredBodyLength {
                try checkPartSize(declared)
                try service.checkObjectSize(declared, "\(bucket)/\(name)")
            }
            let ingest = try BlobIngest(
                service: service, time: context.time,
                limit: (XMLMultipartLimits.maxPartBytes, "part \(number) of an upload of \(bucket)/\(name)"),
                inline: false)
            return .readBody(
                MediaUploadSink(ingest: ingest, fail: { Reply.xmlError($0) }) { ingest, blob in
                    let summary = blob.summary
                    do {
                        try UploadChecks.verify(
                            summary, md5: digests.md5, crc32c: digests.crc32c,
                            object: "part \(number) of an upload of \(bucket)/\(name)")
                    } catch {
                        ingest.discard()
                        return Reply.xmlError(error, code: XMLErrorCode.badDigest)
                    }
                    let part = try storePart(upload, uploadID, number, blobID: blob.id, summary: summary)
                    var headers = HTTPHeaders()
                    headers.add("ETag", XMLMultipartBodies.etag(part))
                    headers.add("x-goog-hash", DownloadHeaders.hash(summary))
                    return Reply.empty(200, headers: headers)
                })
        } catch {
            return .respond(Reply.xmlError(error))
        }
    }

    /// Records the part (replacing an earlier upload of the same number, whose blob then goes), after touching the
    /// upload so that it does not expire while parts arrive — and so that a completion or abort that got in first
    /// refuses it.
    private func storePart(
        _ upload: UploadSession, _ uploadID: String, _ number: Int, blobID: BlobID, summary: BlobSummary
    ) throws -> UploadSession {
        let now = Timestamp.now()
        _ = try service.metadata.updateSession(id: upload.id) { stored in
            guard stored.state == .active else { throw StorageError.noSuchUpload(uploadID) }
            stored.updated = now
        }
        var part = UploadSession(
            id: XMLMultipartIDs.part(uploadID, number), bucket: upload.bucket, name: upload.name,
            fields: ObjectFields(), declaredSize: summary.size, blobID: blobID, created: now, api: .xmlPart)
        part.received = summary.size
        part.part = UploadPart(number: number, md5: summary.md5, crc32c: summary.crc32c)
        do {
            try service.metadata.insertSession(part)
        } catch let error as StorageError where error.code == .alreadyExists {
            var replaced: BlobID?
            _ = try service.metadata.updateSession(id: part.id) { stored in
                replaced = stored.blobID
                stored = part
            }
            if let replaced, replaced != blobID { service.discardBlobLater(replaced) }
        }
        return part
    }

    package func listParts(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, uploadID: String)
        -> HTTPResponse
    {
        run {
            let upload = try activeUpload(bucket, name, uploadID)
            let maxParts = try Self.count(context.query["max-parts"], "max-parts", upTo: 1000) ?? 1000
            let marker = try Self.count(context.query["part-number-marker"], "part-number-marker", upTo: Int.max) ?? 0
            let found = try service.metadata.sessions(
                idPrefix: XMLMultipartIDs.partsPrefix(uploadID),
                after: marker > 0 ? XMLMultipartIDs.part(uploadID, min(marker, XMLMultipartLimits.maxPartNumber)) : nil,
                limit: maxParts + 1)
            let parts = found.prefix(maxParts)
            let truncated = found.count > maxParts
            var inner =
                XMLMultipartBodies.element("Bucket", bucket.rawValue) + XMLMultipartBodies.element("Key", name.rawValue)
                + XMLMultipartBodies.element("UploadId", uploadID)
                + XMLMultipartBodies.element("StorageClass", upload.fields.extras.storageClass ?? "STANDARD")
                + XMLMultipartBodies.element("PartNumberMarker", String(marker))
            if truncated, let last = parts.last?.part?.number {
                inner += XMLMultipartBodies.element("NextPartNumberMarker", String(last))
            }
            inner +=
                XMLMultipartBodies.element("MaxParts", String(maxParts))
                + XMLMultipartBodies.element("IsTruncated", truncated ? "true" : "false")
            inner += parts.map(XMLMultipartBodies.listedPart).joined()
            return XMLMultipartBodies.response("ListPartsResult", inner)
        }
    }

    // MARK: Complete and abort

    package func complete(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, uploadID: String)
        -> RequestDisposition
    {
        .readBody(
            CollectingSink(limit: XMLMultipartLimits.maxCompleteBodyBytes, refuse: { Reply.xmlError($0) }) { body in
                run {
                    let requested = try XMLMultipartBodies.completeRequest(body)
                    guard let upload = try service.metadata.session(id: XMLMultipartIDs.upload(bucket, uploadID)),
                        upload.api == .xmlMultipart, upload.name == name
                    else { throw StorageError.noSuchUpload(uploadID) }
                    // A completion repeated after its answer was lost answers as the first one did.
                    if upload.state == .finalized { return try completedAnswer(context, upload, uploadID) }
                    guard upload.state == .active else { throw StorageError.noSuchUpload(uploadID) }
                    try checkKey(context.headers, upload)
                    guard registry.tryClaim(upload.id) else {
                        throw StorageError(.conflict, "another request is completing upload \(uploadID)")
                    }
                    defer { registry.release(upload.id) }
                    let all = try parts(of: uploadID)
                    let sources = try chosenParts(requested, from: all, uploadID: uploadID)
                    let record: ObjectRecord
                    do {
                        record = try service.compose(
                            sources.map {
                                ComposedSource(blobID: $0.blobID, size: $0.received, crc32c: $0.part!.crc32c)
                            },
                            into: bucket, name, fields: upload.fields, conditions: upload.conditions,
                            principal: context.principal, componentCount: sources.count, time: context.time,
                            finalizing: upload.id)
                    } catch let error as StorageError where error.code == .conflict {
                        // Another node's completion won the race: answer as it did.
                        if let latest = try service.metadata.session(id: upload.id), latest.state == .finalized {
                            return try completedAnswer(context, latest, uploadID)
                        }
                        throw error
                    }
                    // GCS drops every part once the upload completes, used or not.
                    drop(all)
                    return XMLMultipartBodies.completed(location: location(context), record)
                }
            })
    }

    package func abort(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, uploadID: String)
        -> HTTPResponse
    {
        run {
            try service.abortMultipartUpload(try activeUpload(bucket, name, uploadID))
            return Reply.empty(204)
        }
    }

    // MARK: Uploads of a bucket

    /// `GET /{bucket}?uploads`: the uploads in progress, by upload id (`upload-id-marker` pages on), those whose
    /// names start with `prefix`.
    package func listUploads(_ context: RequestContext, _ bucket: BucketName) -> HTTPResponse {
        run {
            let maxUploads = try Self.count(context.query["max-uploads"], "max-uploads", upTo: 1000) ?? 1000
            let prefix = context.query["prefix"] ?? ""
            let marker = context.query["upload-id-marker"].flatMap { $0.isEmpty ? nil : $0 }
            var after = marker.map { XMLMultipartIDs.upload(bucket, $0) }
            var listed: [UploadSession] = []
            var more = true
            // Finished uploads wait among these for expiry: skip them, a page of the store at a time.
            while more && listed.count <= maxUploads {
                let page = try service.metadata.sessions(
                    idPrefix: XMLMultipartIDs.uploadsPrefix(bucket), after: after, limit: 1000)
                more = page.count == 1000
                after = page.last?.id
                listed += page.filter { $0.state == .active && $0.name.rawValue.hasPrefix(prefix) }
            }
            let truncated = listed.count > maxUploads
            let shown = listed.prefix(maxUploads)
            var inner =
                XMLMultipartBodies.element("Bucket", bucket.rawValue) + XMLMultipartBodies.element("KeyMarker", "")
                + XMLMultipartBodies.element("UploadIdMarker", marker ?? "")
            if truncated, let last = shown.last {
                inner +=
                    XMLMultipartBodies.element("NextKeyMarker", last.name.rawValue)
                    + XMLMultipartBodies.element("NextUploadIdMarker", XMLMultipartIDs.uploadID(of: last))
            }
            inner +=
                XMLMultipartBodies.element("MaxUploads", String(maxUploads))
                + XMLMultipartBodies.element("IsTruncated", truncated ? "true" : "false")
            if !prefix.isEmpty { inner += XMLMultipartBodies.element("Prefix", prefix) }
            for upload in shown {
                inner +=
                    "<Upload>" + XMLMultipartBodies.element("Key", upload.name.rawValue)
                    + XMLMultipartBodies.element("UploadId", XMLMultipartIDs.uploadID(of: upload))
                    + XMLMultipartBodies.element("StorageClass", upload.fields.extras.storageClass ?? "STANDARD")
                    + XMLMultipartBodies.element("Initiated", upload.created.rfc3339) + "</Upload>"
            }
            return XMLMultipartBodies.response("ListMultipartUploadsResult", inner)
        }
    }

    // MARK: Helpers

    /// The upload `uploadID` of `bucket`/`name` while it is in progress; 404 `NoSuchUpload` otherwise.
    private func activeUpload(_ bucket: BucketName, _ name: ObjectName, _ uploadID: String) throws -> UploadSession {
        guard XMLMultipartIDs.isUploadID(uploadID),
            let upload = try service.metadata.session(id: XMLMultipartIDs.upload(bucket, uploadID)),
            upload.api == .xmlMultipart, upload.name == name, upload.state == .active
        else { throw StorageError.noSuchUpload(uploadID) }
        return upload
    }

    private func parts(of uploadID: String) throws -> [UploadSession] { try service.multipartParts(of: uploadID) }

    /// The parts a completion names, checked as GCS checks them: ascending numbers (`InvalidPartOrder`), each one
    /// uploaded with the ETag given (`InvalidPart`), every one but the last at least 5 MiB (`EntityTooSmall`).
    private func chosenParts(
        _ requested: [(number: Int, etag: String)], from all: [UploadSession], uploadID: String
    ) throws -> [UploadSession] {
        guard requested.count <= XMLMultipartLimits.maxPartNumber else {
            throw StorageError(
                .invalidArgument, "a completion lists at most \(XMLMultipartLimits.maxPartNumber) parts")
        }
        var byNumber: [Int: UploadSession] = [:]
        for part in all { if let number = part.part?.number { byNumber[number] = part } }
        var chosen: [UploadSession] = []
        for (index, entry) in requested.enumerated() {
            if index > 0, entry.number <= requested[index - 1].number {
                throw StorageError.xml(
                    .invalidArgument, XMLErrorCode.invalidPartOrder,
                    "The list of parts was not in ascending order: part \(entry.number) follows part "
                        + "\(requested[index - 1].number).")
            }
            guard let part = byNumber[entry.number], XMLMultipartBodies.etag(entry.etag, matches: part) else {
                throw StorageError.xml(
                    .invalidArgument, XMLErrorCode.invalidPart,
                    "One or more of the specified parts could not be found or its ETag does not match: part "
                        + "\(entry.number) of upload \(uploadID).")
            }
            chosen.append(part)
        }
        for part in chosen.dropLast() where part.received < XMLMultipartLimits.minPartBytes {
            throw StorageError.xml(
                .invalidArgument, XMLErrorCode.entityTooSmall,
                "Part \(part.part?.number ?? 0) is \(part.received) bytes; every part but the last must be at least "
                    + "\(XMLMultipartLimits.minPartBytes) bytes.")
        }
        return chosen
    }

    private func drop(_ parts: [UploadSession]) { service.dropMultipartParts(parts) }

    private func completedAnswer(_ context: RequestContext, _ upload: UploadSession, _ uploadID: String) throws
        -> HTTPResponse
    {
        guard let generation = upload.resultGeneration,
            let record = try service.object(upload.bucket, upload.name, generation: generation)
        else { throw StorageError.noSuchUpload(uploadID) }
        return XMLMultipartBodies.completed(location: location(context), record)
    }

    /// The object's URL as the client addressed us.
    private func location(_ context: RequestContext) -> String { service.externalBase(context) + context.head.rawPath }

    /// An upload made with a customer-supplied key takes parts and its completion only with the same key.
    private func checkKey(_ headers: HTTPHeaders, _ upload: UploadSession) throws {
        guard let stored = upload.fields.extras.customerKeySHA256 else { return }
        guard try CustomerEncryption.keySHA256(headers) == stored else {
            throw StorageError(
                .invalidArgument,
                "The upload of \(upload.bucket)/\(upload.name) was initiated with a customer-supplied encryption key; "
                    + "the same key must be provided")
        }
    }

    private func checkPartSize(_ size: Int64) throws {
        guard size <= XMLMultipartLimits.maxPartBytes else {
            throw StorageError(
                .payloadTooLarge, "a part is at most \(XMLMultipartLimits.maxPartBytes) bytes, not \(size)")
        }
    }

    /// A non-negative count parameter, at most `bound`.
    private static func count(_ text: String?, _ name: String, upTo bound: Int) throws -> Int? {
        guard let text else { return nil }
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(text) else {
            throw StorageError(.invalidArgument, "\(name) must be a non-negative integer, not \(text.prefix(20))")
        }
        return min(value, bound)
    }

    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.xmlError(error) }
    }
}

/// The bounds of a multipart upload, GCS's: part numbers 1…10 000, parts of 5 MiB (all but the last) to 5 GiB.
enum XMLMultipartLimits {
    static let maxPartNumber = 10_000
    static let minPartBytes: Int64 = 5 << 20
    static let maxPartBytes: Int64 = 5 << 30
    /// A completion listing 10 000 parts with generous whitespace.
    static let maxCompleteBodyBytes = 4 << 20
}
