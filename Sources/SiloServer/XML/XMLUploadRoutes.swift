import SiloCore
import SiloHTTP

/// Where the XML API's upload protocols branch off its object and bucket routes (``XMLRoutes``): requests with
/// `?uploads`, `?uploadId=`, `?upload_id=` or `x-goog-resumable` go to the multipart and resumable handlers.
struct XMLUploadRoutes {
    let multipart: XMLMultipartUploads
    let resumable: XMLResumable

    init(service: ObjectService, registry: SessionRegistry, engine: GCSUploads) {
        multipart = XMLMultipartUploads(service: service, registry: registry)
        resumable = XMLResumable(service: service, engine: engine)
    }

    /// The handler of an upload-protocol request on `/{bucket}/{object}`; nil for any other request.
    func object(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition? {
        let query = context.query
        if query.contains("upload_id") {
            // Chunks and status queries are PUTs (POST too, as some clients send them), cancel is DELETE: a read of
            // the session URI must not finish an upload.
            guard ["PUT", "POST", "DELETE"].contains(context.method) else {
                return .respond(Self.notHere(context, "upload_id"))
            }
            return resumable.session(context, bucket, name)
        }
        if context.method == "POST", let value = context.headers["x-goog-resumable"] {
            return .respond(resumable.start(context, bucket, name, value: value))
        }
        if query.contains("uploads") {
            guard context.method == "POST" else { return .respond(Self.notHere(context, "?uploads")) }
            return .respond(multipart.initiate(context, bucket, name))
        }
        guard let uploadID = query["uploadId"] else { return nil }
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

    /// `GET /{bucket}?uploads`; nil for any other request.
    func bucket(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition? {
        guard context.query.contains("uploads") else { return nil }
        guard context.method == "GET" || context.method == "HEAD" else {
            return .respond(Self.notHere(context, "?uploads on a bucket"))
        }
        return .respond(multipart.listUploads(context, bucket))
    }

    private static func notHere(_ context: RequestContext, _ what: String) -> HTTPResponse {
        Reply.xmlError(StorageError(.invalidArgument, "\(context.method.prefix(16)) is not allowed with \(what)"))
    }
}
