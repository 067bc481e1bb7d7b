package import SiloCore
package import SiloHTTP
import SiloWire

/// The `X-Goog-Upload-Command` resumable protocol over ``ResumableSessions``: start, upload, finalize, query,
/// cancel, in the JS/Android form (POST) and the iOS form (PUT, no Authorization on chunks, its own header names).
/// The v0 API's uploads speak it, and so do GCS JSON sessions sent by the emulator's own tests, so it lives here
/// rather than in either API.
package struct CommandResumable {
    let sessions: ResumableSessions
    var service: ObjectService { sessions.service }

    package init(_ sessions: ResumableSessions) { self.sessions = sessions }

    /// The commands of an `X-Goog-Upload-Command` header: comma-separated, trimmed, case-insensitive.
    package static func commands(_ header: String?) -> Set<String> {
        guard let header else { return [] }
        return Set(
            header.split(separator: ",").map { $0.trimmingCharacters(in: " ").lowercased() }.filter { !$0.isEmpty })
    }

    package func start(_ context: RequestContext, bucket: BucketName, pathName: ObjectName?) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.firebaseError($0) }) { body in
                do {
                    try service.checkUploadBucket(bucket)
                    let changes = try UploadFields.parseChanges(body)
                    let name = try UploadFields.objectName(pathName: pathName, query: context.query, json: changes)
                    let headers = context.headers
                    let headerType =
                        headers["X-Goog-Upload-Header-Content-Type"] ?? headers["X-Goog-Upload-Content-Type"]
                    let declared =
                        (headers["X-Goog-Upload-Header-Content-Length"] ?? headers["X-Goog-Upload-Content-Length"])
                        .map { $0.trimmingCharacters(in: " ") }
                    var declaredSize: Int64?
                    if let declared, !declared.isEmpty {
                        guard let value = Int64(declared), value >= 0 else {
                            throw StorageError(.invalidArgument, "invalid upload content length \(declared.prefix(40))")
                        }
                        declaredSize = value
                    }
                    let fields = try UploadFields.firebase(changes, fallbackContentType: headerType, name: name)
                    // Access is decided before a session (and its blob) exists.
                    try service.authorizeUploadStart(
                        bucket: bucket, name: name, fields: fields, declaredSize: declaredSize,
                        principal: context.principal, time: context.time)
                    let caller = service.quotaCaller(context.principal, peer: context.head.peer)
                    if let caller {
                        let left = try service.pendingAllowance(caller, opening: true, time: context.time)
                        if let declaredSize, declaredSize > left {
                            throw StorageError(
                                .tooManyRequests,
                                "this upload of \(declaredSize) bytes would exceed the bytes open sessions may hold")
                        }
                    }
                    let strict = service.configuration.strictV0Checksums
                    let session = try sessions.open(
                        bucket, name, fields: fields, declaredSize: declaredSize, context: context, api: .firebase
                    ) { session in
                        session.caller = caller
                        if strict { session.expectedMD5 = changes?.md5Hash }
                    }
                    var out = HTTPHeaders()
                    out.set("X-Goog-Upload-Status", "active")
                    out.set("X-Goog-Upload-URL", sessionURL(context, bucket: bucket, name: name, id: session.id))
                    out.set("X-Goog-Upload-Chunk-Granularity", String(service.configuration.chunkGranularity))
                    out.set("X-Goog-Upload-Control-URL", "")
                    out.set("X-GUploader-UploadID", session.id)
                    return Reply.empty(200, headers: out)
                } catch {
                    return Reply.firebaseError(error)
                }
            })
    }

    /// The session URL, absolute, built from the Host the client used.
    func sessionURL(_ context: RequestContext, bucket: BucketName, name: ObjectName, id: String) -> String {
        "\(service.externalBase(context))/v0/b/\(PercentCoding.encodeComponent(bucket.rawValue))/o?name="
            + "\(PercentCoding.encodeComponent(name.rawValue))&upload_id=\(id)&upload_protocol=resumable"
    }

    /// A command on session `upload_id`, reached through `bucket`'s URL of `api`. A session answers only on its
    /// own bucket's URLs, and a GCS session only on the GCS API's (whichever URL finishes it, its commit is decided
    /// by IAM for its starter, ``SiloServerApp``'s `sessionCommit`).
    package func command(_ context: RequestContext, commands: Set<String>, bucket: BucketName, api: UploadSession.API)
        -> RequestDisposition
    {
        let session: UploadSession
        do {
            session = try sessions.find(
                context.query["upload_id"], bucket: bucket, accepts: api == .gcs ? [.firebase, .gcs] : [.firebase])
        } catch {
            return .respond(Reply.firebaseError(error))
        }
        let id = session.id
        if commands.contains("query") { return .respond(status(session)) }
        if commands.contains("cancel") { return .respond(cancel(session)) }
        let finalize = commands.contains("finalize")
        guard finalize || commands.contains("upload") else {
            return .respond(
                Reply.firebaseError(
                    StorageError(.invalidArgument, "unknown X-Goog-Upload-Command \(commands.sorted())"),
                    headers: statusHeaders(session)))
        }
        switch session.state {
        case .cancelled:
            return .respond(
                Reply.firebaseError(
                    StorageError(.invalidArgument, "upload session \(id) was cancelled"),
                    headers: statusHeaders(session)))
        case .failed:
            let error = StorageError(.invalidArgument, session.failureMessage ?? "upload failed")
            return .respond(
                Reply.json(
                    session.failureStatus ?? 400,
                    FirebaseMetadata.errorJSON(status: session.failureStatus ?? 400, message: error.message),
                    headers: statusHeaders(session)))
        case .finalized:
            guard finalize else {
                return .respond(
                    Reply.firebaseError(
                        StorageError(.invalidArgument, "upload session \(id) is already final"),
                        headers: statusHeaders(session)))
            }
            return .respond(finalAnswer(session))
        case .active:
            break
        }
        // Bytes at the front of the body that the session has already: a client that lost the answer to a chunk
        // resends it from its old offset. They are dropped and the rest appended, as on the GCS APIs; a resent
        // `upload, finalize` whose bytes are all there finalizes.
        var resent: Int64 = 0
        if let offsetText = context.headers["X-Goog-Upload-Offset"] {
            let offset = Int64(offsetText.trimmingCharacters(in: " "))
            let length = commands.contains("upload") ? context.declaredBodyLength : 0
            guard let offset,
                offset == session.received
                    || (offset >= 0 && offset < session.received
                        && length.map { offset + $0 >= session.received } == true)
            else {
                return .respond(
                    Reply.firebaseError(
                        StorageError(
                            .invalidArgument,
                            "upload offset \(offsetText.prefix(40)) does not match the \(session.received) bytes received"
                        ),
                        headers: statusHeaders(session)))
            }
            resent = session.received - offset
        }
        do {
            let sink = try sessions.append(session, finalize: finalize, resent: resent) { result in
                switch result {
                case .success(let outcome):
                    if let object = outcome.object {
                        return Reply.json(200, FirebaseMetadata.json(object), headers: statusHeaders(outcome.session))
                    }
                    return Reply.empty(200, headers: statusHeaders(outcome.session))
                case .failure(let error):
                    let current = (try? service.metadata.session(id: id)) ?? session
                    return Reply.firebaseError(error, headers: statusHeaders(current))
                }
            }
            // `finalize` without `upload` carries no object data: a body (some clients send `{}`) is read and
            // dropped, within the JSON limit, as the emulator does.
            guard commands.contains("upload") else {
                return .readBody(
                    BodyDroppingSink(sink, limit: service.configuration.maxJSONBodyBytes) {
                        Reply.firebaseError($0, headers: statusHeaders(session))
                    })
            }
            return .readBody(sink)
        } catch {
            var headers = statusHeaders(session)
            // Another request is writing the session: worth a retry once it is done.
            if StorageError.wrap(error).code == .unavailable { headers.set("Retry-After", "1") }
            return .respond(Reply.firebaseError(error, headers: headers))
        }
    }

    private func cancel(_ session: UploadSession) -> HTTPResponse {
        switch session.state {
        case .cancelled: return Reply.empty(200, headers: statusHeaders(session))
        case .finalized, .failed:
            return Reply.firebaseError(
                StorageError(.invalidArgument, "upload session \(session.id) is already final"),
                headers: statusHeaders(session))
        case .active:
            do {
                return Reply.empty(200, headers: statusHeaders(try sessions.cancel(session)))
            } catch {
                return Reply.firebaseError(error)
            }
        }
    }

    private func status(_ session: UploadSession) -> HTTPResponse {
        Reply.empty(200, headers: statusHeaders(session))
    }

    private func finalAnswer(_ session: UploadSession) -> HTTPResponse {
        do {
            let object = try sessions.result(session, orLive: true)
            return Reply.json(200, FirebaseMetadata.json(object), headers: statusHeaders(session))
        } catch {
            return Reply.firebaseError(error, headers: statusHeaders(session))
        }
    }

    func statusHeaders(_ session: UploadSession) -> HTTPHeaders {
        var headers = HTTPHeaders()
        let word: String
        switch session.state {
        case .active: word = "active"
        case .cancelled: word = "cancelled"
        case .finalized, .failed: word = "final"
        }
        headers.set("X-Goog-Upload-Status", word)
        headers.set("X-Goog-Upload-Size-Received", String(session.received))
        return headers
    }
}

/// Passes a request to `inner` without its body: the bytes are counted and dropped (at most `limit`, past which
/// the request is refused with 413 and `inner` aborted).
final class BodyDroppingSink: BoundedBodySink {
    private let inner: any RequestBodySink
    private let limit: Int
    private let refusal: (StorageError) -> HTTPResponse
    private var dropped = 0

    init(_ inner: any RequestBodySink, limit: Int, refuse: @escaping (StorageError) -> HTTPResponse) {
        self.inner = inner
        self.limit = limit
        self.refusal = refuse
    }

    package var maxBodyBytes: Int64 { Int64(limit) }
    package func refuse(_ error: StorageError) -> HTTPResponse { refusal(error) }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        dropped += chunk.count
        guard dropped > limit else { return nil }
        inner.abort()
        return refuse(StorageError(.payloadTooLarge, "a finalize without upload carries no more than \(limit) bytes"))
    }

    package func finish() -> HTTPResponse { inner.finish() }
    package func abort() { inner.abort() }
    /// The body is dropped, never the inner sink's: the transport's buffers do.
    package func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
}
