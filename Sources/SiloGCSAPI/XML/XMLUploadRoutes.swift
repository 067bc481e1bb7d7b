import SiloCore
import SiloHTTP
import SiloServerKit

/// The XML API's upload protocols, reached from ``XMLRoutes``' hooks once the bucket is known to exist: requests with
/// `?uploads` or `?uploadId=` (multipart), `?upload_id=` or `x-goog-resumable` (resumable).
struct XMLUploadRoutes {
    let multipart: XMLMultipartUploads
    let resumable: XMLResumable

    init(service: ObjectService, registry: SessionRegistry, sessions: ResumableSessions) {
        multipart = XMLMultipartUploads(service: service, registry: registry)
        resumable = XMLResumable(service: service, sessions: sessions)
    }

    /// `?uploads` (initiate) or `?uploadId=` (parts, list, complete, abort) on `/{bucket}/{object}`.
    package func multipart(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        if context.query.contains("uploads") {
            guard context.method == "POST" else { return .respond(Self.notHere(context, "?uploads")) }
            return .respond(multipart.initiate(context, bucket, name))
        }
        let uploadID = context.query["uploadId"] ?? ""
        guard XMLMultipartIDs.isUploadID(uploadID) else {
            return .respond(Reply.xmlError(StorageError.noSuchUpload(uploadID)))
        }
        switch context.method {
        case "PUT": return multipart.uploadPart(context, bucket, name, uploadID: uploadID)
        case "GET", "HEAD": return .respond(multipart.listParts(context, bucket, name, uploadID: uploadID))
        case "POST": return multipart.complete(context, bucket, name, uploadID: uploadID)
        case "DELETE": return .respond(multipart.abort(context, bucket, name, uploadID: uploadID))
        default: return .respond(Self.notHere(context, "?uploadId="))
        }
    }

    /// `?upload_id=` (the session URI) or `x-goog-resumable: start` on `/{bucket}/{object}`.
    package func resumable(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        if context.query.contains("upload_id") {
            // Chunks and status queries are PUTs (POST too, as some clients send them), cancel is DELETE: a read of
            // the session URI must not finish an upload.
            guard ["PUT", "POST", "DELETE"].contains(context.method) else {
                return .respond(Self.notHere(context, "upload_id"))
            }
            return resumable.session(context, bucket, name)
        }
        guard context.method == "POST", let value = context.headers["x-goog-resumable"] else {
            return .respond(Self.notHere(context, "x-goog-resumable"))
        }
        return .respond(resumable.start(context, bucket, name, value: value))
    }

    /// `GET /{bucket}?uploads`: the bucket's uploads in progress.
    package func bucketUploads(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        guard context.method == "GET" || context.method == "HEAD" else {
            return .respond(Self.notHere(context, "?uploads on a bucket"))
        }
        return .respond(multipart.listUploads(context, bucket))
    }

    private static func notHere(_ context: RequestContext, _ what: String) -> HTTPResponse {
        Reply.xmlError(
            StorageError(.methodNotAllowed, "\(context.method.prefix(16)) is not allowed with \(what)"))
    }
}
