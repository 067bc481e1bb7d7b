package import SiloCore
package import SiloHTTP

/// The `Content-Range` / 308 resumable protocol on a session URL, over ``ResumableSessions``: a chunk is
/// `bytes first-last/total` (or `*` while the total is unknown), a status query is `bytes */total` with no body, and
/// an unfinished upload answers 308 with the persisted `Range`. The GCS JSON API's upload URL and the XML API's
/// session URI both speak it, each answering in its own shape (``ResumableFace``).
package struct RangeResumable {
    let sessions: ResumableSessions

    package init(_ sessions: ResumableSessions) { self.sessions = sessions }

    /// A request on session `upload_id`, answered in `face`'s shape. With `name`, the session must be that object's.
    package func handle(_ context: RequestContext, _ bucket: BucketName, name: ObjectName? = nil, face: ResumableFace)
        -> RequestDisposition
    {
        do {
            let session = try sessions.find(
                context.query["upload_id"], bucket: bucket, accepts: face.accepts, name: name)
            if context.method == "DELETE" { return .respond(cancel(session, face)) }
            switch session.state {
            case .finalized: return .respond(face.object(try sessions.result(session, orLive: false)))
            case .cancelled: throw StorageError(.notFound, "upload session \(session.id) was cancelled")
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
                return try chunk(context, session, total: whole, finalize: true, face)
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
                    return try chunk(context, session, total: total, finalize: true, face)
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
            return try chunk(context, session, total: total, finalize: complete, resent: resent, face)
        } catch {
            return .respond(face.error(error))
        }
    }

    private func chunk(
        _ context: RequestContext, _ session: UploadSession, total: Int64?, finalize: Bool, resent: Int64 = 0,
        _ face: ResumableFace
    ) throws -> RequestDisposition {
        .readBody(
            try sessions.append(session, total: total, finalize: finalize, resent: resent) { result in
                switch result {
                case .success(let outcome):
                    if let object = outcome.object { return face.object(object) }
                    return incomplete(outcome.session.received, context)
                case .failure(let error): return face.error(error)
                }
            })
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

    /// `DELETE {session}`: GCS answers 499 (client closed request) for a cancelled upload.
    private func cancel(_ session: UploadSession, _ face: ResumableFace) -> HTTPResponse {
        guard session.state == .active else { return Reply.empty(499) }
        do {
            _ = try sessions.cancel(session)
            return Reply.empty(499)
        } catch {
            return face.error(error)
        }
    }
}

/// How one API answers on a `Content-Range` session (``RangeResumable``).
package struct ResumableFace {
    /// The sessions this face serves: one started through another API is not found here.
    package var accepts: Set<UploadSession.API>
    package var error: (any Error) -> HTTPResponse
    /// The answer of the request that finalized, and of any later request on the finalized session.
    package var object: (ObjectRecord) -> HTTPResponse
    /// The refusal of a failed finalize, repeated: its status and message.
    package var refused: (_ status: Int, _ message: String) -> HTTPResponse

    package init(
        accepts: Set<UploadSession.API>, error: @escaping (any Error) -> HTTPResponse,
        object: @escaping (ObjectRecord) -> HTTPResponse,
        refused: @escaping (_ status: Int, _ message: String) -> HTTPResponse
    ) {
        (self.accepts, self.error, self.object, self.refused) = (accepts, error, object, refused)
    }
}
