import SiloCore
import SiloHTTP
import SiloServerKit

/// `POST /batch/storage/v1` (and `/batch`, `/batch/storage/v1/`): GCS's batch endpoint, as google-cloud-storage's
/// `client.batch()` and gcsfs's bulk `rm` use it. Each call is dispatched through the same router, authentication and
/// handlers as a request of its own — its own `Authorization` if it has one, else the batch's — and answered in a
/// `multipart/mixed` part of its own, in order. Only JSON API metadata calls can be batched, as in GCS: an upload or
/// a media download answers 400 in its part.
///
/// Calls run one after another when the whole batch body has arrived, on the thread that runs every handler; each
/// does exactly the store work it would do on its own.
struct BatchRoutes {
    let configuration: ServerConfiguration

    /// Runs one embedded request to completion (every body byte fed, the answer produced) through the app's router.
    typealias Dispatch = (HTTPRequestHead, [UInt8]) -> HTTPResponse

    package func handle(_ context: RequestContext, dispatch: @escaping Dispatch) -> RequestDisposition {
        guard context.method == "POST" else {
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported here; use POST")))
        }
        guard
            let boundary = MultipartParser.boundary(
                fromContentType: context.headers["Content-Type"], mediaType: "multipart/mixed")
        else {
            return .respond(
                Reply.gcsError(
                    StorageError(
                        .invalidArgument, "a batch request needs Content-Type: multipart/mixed with a boundary")))
        }
        let limit = configuration.maxBatchBodyBytes
        if let declared = context.declaredBodyLength, declared > limit {
            return .respond(
                Reply.gcsError(StorageError(.payloadTooLarge, "the batch request body exceeds \(limit) bytes")))
        }
        let outer = context.head
        return .readBody(
            CollectingSink(limit: limit, refuse: { Reply.gcsError($0) }) { [configuration] body in
                let calls: [BatchCall]
                do {
                    calls = try BatchRequest.parse(body, boundary: boundary, maxCalls: configuration.maxBatchCalls)
                } catch {
                    return Reply.gcsError(error)
                }
                var writer = BatchResponseWriter()
                for call in calls {
                    let response: HTTPResponse
                    if writer.byteCount > configuration.maxBatchResponseBytes {
                        // Not run: an answer that cannot be sent must not be a change that was made.
                        response = Reply.gcsError(
                            StorageError(
                                .invalidArgument,
                                "not run: the batch's answers exceed \(configuration.maxBatchResponseBytes) bytes; "
                                    + "send fewer calls per batch"))
                    } else {
                        switch call.request {
                        case .failure(let error): response = Reply.gcsError(error)
                        case .success(let request): response = Self.run(request, outer: outer, dispatch: dispatch)
                        }
                    }
                    writer.append(response, contentID: call.contentID)
                }
                return writer.finish()
            })
    }

    /// One call: its head completed from the batch's where it says nothing (Host, Authorization), refused before
    /// dispatch unless it is a JSON API metadata call. The connection's facts (peer, local address, TLS) and the
    /// forwarding headers are always the batch's: a proxy sets those on the batch, while a call's own were written
    /// by the client inside the body, and must not count as a trusted proxy's.
    package static func run(_ request: EmbeddedRequest, outer: HTTPRequestHead, dispatch: Dispatch) -> HTTPResponse {
        var headers = request.headers
        if !headers.contains("Host"), let host = request.authority ?? outer.headers["Host"] {
            headers.add("Host", host)
        }
        if !headers.contains("Authorization"), let value = outer.headers["Authorization"] {
            headers.add("Authorization", value)
        }
        for name in ["X-Forwarded-Host", "X-Forwarded-Proto"] {
            headers.remove(name)
            if let value = outer.headers[name] { headers.add(name, value) }
        }
        var head = HTTPRequestHead(
            method: request.method, target: request.target, headers: headers, version: request.version)
        head.peer = outer.peer
        head.local = outer.local
        head.isSecure = outer.isSecure
        if let refusal = refusal(head) { return Reply.gcsError(refusal) }
        var response = dispatch(head, request.body)
        switch response.body {
        case .empty, .bytes:
            break
        case .file, .stream(_, _):
            // Media never gets here (refused above); should a handler answer with one anyway, it is not sent.
            if case .stream(_, let producer) = response.body { producer.close() }
            response = Reply.gcsError(StorageError(.invalidArgument, "media cannot be sent in a batch"))
        }
        if head.method == "HEAD" { response.body = .empty }
        return response
    }

    /// Why a call may not run in a batch: GCS batches JSON API calls only — no uploads, no media downloads, no
    /// other API (and no batch within a batch).
    package static func refusal(_ head: HTTPRequestHead) -> StorageError? {
        let path = head.rawPath
        let media = StorageError(
            .invalidArgument, "Uploads and media downloads cannot be sent in a batch; only JSON API metadata calls can")
        if path.hasPrefix("/upload/") || path.hasPrefix("/download/") { return media }
        if head.queryItems?.contains(where: { $0.name == "alt" && $0.value == "media" }) == true { return media }
        let jsonAPI = path.hasPrefix("/storage/v1/") || path == "/b" || path.hasPrefix("/b/")
        guard jsonAPI else {
            return StorageError(
                .invalidArgument, "only JSON API calls (/storage/v1/…) can be sent in a batch, not \(path.prefix(200))")
        }
        // A path that does not parse is dispatched all the same: the router answers its 400 in the GCS shape.
        guard let route = try? GCSRoute.parse(path) else { return nil }
        switch route {
        case .gcsUpload:
            return media
        case .gcsObjects where head.method != "GET" && head.method != "HEAD":
            return media  // objects.insert
        case .gcsBuckets, .gcsBucket, .gcsObjects, .gcsObject, .gcsCopy, .gcsCompose, .gcsBucketSub, .gcsObjectSub:
            return nil
        default:
            return StorageError(.invalidArgument, "only JSON API calls can be sent in a batch")
        }
    }
}

/// Writes the batch's answer: `multipart/mixed`, one `application/http` part per call in order, each holding the
/// call's status line, its headers (only those a transport would send: a token for a name, no CR/LF in a value) and
/// its body. `Content-ID: <response-ID>` answers a call that had `Content-ID: <ID>`, as GCS does.
struct BatchResponseWriter {
    private var parts: [[UInt8]] = []
    /// Bytes of the parts so far.
    private(set) var byteCount = 0

    mutating func append(_ response: HTTPResponse, contentID: String?) {
        var out: [UInt8] = []
        out.append(contentsOf: "Content-Type: application/http\r\n".utf8)
        if let contentID {
            // Checked as a field value where it entered (BatchRequest), so it cannot split this head.
            out.append(contentsOf: "Content-ID: <response-\(contentID)>\r\n".utf8)
        }
        out.append(contentsOf: "\r\nHTTP/1.1 \(response.status) ".utf8)
        let reason = HTTPReasonPhrase.of(response.status)
        out.append(contentsOf: UnsafeBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount))
        out.append(contentsOf: "\r\n".utf8)
        for field in response.headers
        where !HTTPHeaders.isTransportField(field.name) && HTTPHeaders.isSendable(field) {
            out.append(contentsOf: "\(field.name): \(field.value)\r\n".utf8)
        }
        if let id = response.requestID { out.append(contentsOf: "X-Request-Id: \(id)\r\n".utf8) }
        let body: [UInt8]
        switch response.body {
        case .bytes(let bytes): body = bytes
        default: body = []
        }
        out.append(contentsOf: "Content-Length: \(body.count)\r\n\r\n".utf8)
        out.append(contentsOf: body)
        byteCount += out.count
        parts.append(out)
    }

    /// The `200` holding every part, under a boundary that none of them contains.
    func finish() -> HTTPResponse {
        var boundary = "batch_" + BlobID.random().rawValue
        while parts.contains(where: { Self.contains($0, Array("--\(boundary)".utf8)) }) {
            boundary = "batch_" + BlobID.random().rawValue
        }
        var body: [UInt8] = []
        body.reserveCapacity(byteCount + parts.count * (boundary.utf8.count + 8) + boundary.utf8.count + 8)
        for part in parts {
            body.append(contentsOf: "--\(boundary)\r\n".utf8)
            body.append(contentsOf: part)
            body.append(contentsOf: "\r\n".utf8)
        }
        body.append(contentsOf: "--\(boundary)--\r\n".utf8)
        // Unquoted, and the last parameter: gcsfs takes the boundary as everything after the header's first '='.
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "multipart/mixed; boundary=\(boundary)"], body: .bytes(body))
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        haystack.withUnsafeBytes { MultipartParser.firstDelimiter(needle, in: $0) != nil }
    }
}
