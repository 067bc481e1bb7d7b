import SiloCore
import SiloHTTP
import SiloServerKit

/// The XML API's resumable uploads: `POST /{bucket}/{object}` with `x-goog-resumable: start` opens a session and
/// answers 201 with its URI in `Location` (the request's own URL, other query parameters kept, so that a signed
/// URL's session URI still carries its signature, plus `upload_id=`); the chunks, status queries and the cancel
/// that follow speak the `Content-Range` protocol (``RangeResumable``), answering in the XML API's shape.
struct XMLResumable {
    let service: ObjectService
    let sessions: ResumableSessions

    package func start(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, value: String)
        -> HTTPResponse
    {
        do {
            guard equalsIgnoringCase(value, "start") else {
                throw StorageError(.invalidArgument, "x-goog-resumable must be start, not \(value.prefix(20))")
            }
            let fields = try XMLObjectHeaders.fields(context, service: service, bucket: bucket, name: name)
            let conditions = try XMLObjectHeaders.conditions(context.headers)
            var declared: Int64?
            if let text = context.headers["X-Upload-Content-Length"] {
                guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(text) else {
                    throw StorageError(.invalidArgument, "invalid X-Upload-Content-Length \(text.prefix(40))")
                }
                try service.checkObjectSize(value, "\(bucket)/\(name)")
                declared = value
            }
            let session = try sessions.open(
                bucket, name, fields: fields, declaredSize: declared, conditions: conditions, context: context,
                api: .xml)
            let query = context.head.rawQuery.isEmpty ? "" : context.head.rawQuery + "&"
            let location =
                service.externalBase(context) + context.head.rawPath + "?" + query + "upload_id=" + session.id
            return Reply.empty(
                201, headers: ["Location": location, "X-GUploader-UploadID": session.id, "Content-Length": "0"])
        } catch {
            return Reply.xmlError(error)
        }
    }

    /// `PUT` (a chunk, the whole object, or a status query with `Content-Range: bytes */N`) or `DELETE` on the
    /// session URI.
    func session(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        RangeResumable(sessions).handle(context, bucket, name: name, face: Self.face)
    }

    /// The XML API's answers: the finished object as headers (ETag, generation, hashes) with an empty body, errors
    /// in the XML shape.
    package static var face: ResumableFace {
        ResumableFace(
            accepts: [.xml], error: { Reply.xmlError($0) },
            object: { Reply.empty(200, headers: XMLObjectHeaders.written($0)) },
            refused: { status, message in Reply.xmlError(StorageError(code(status), message)) })
    }

    /// The error code a refused finalize's status came from.
    private static func code(_ status: Int) -> StorageError.Code {
        switch status {
        case 403: .permissionDenied
        case 404: .notFound
        case 409: .conflict
        case 412: .preconditionFailed
        case 413: .payloadTooLarge
        case 429: .tooManyRequests
        default: .invalidArgument
        }
    }
}
