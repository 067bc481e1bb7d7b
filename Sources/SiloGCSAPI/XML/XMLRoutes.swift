import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// The GCS XML API (docs/xml-api.md): objects addressed as `/{bucket}/{object}` (or `/{object}` on
/// `{bucket}.{suffix}`), as gsutil's XML mode, Rust's object_store, signed URLs and pasted
/// `storage.googleapis.com` links use it. Access was decided before any route here runs (`SiloServerApp.xml`).
struct XMLRoutes {
    let service: ObjectService
    let download: DownloadResponder
    let uploads: XMLUploadRoutes

    /// `/{bucket}`: object listing, bucket existence, creation and deletion, POST policy form uploads.
    package func bucket(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        if context.query.contains("uploads") {
            if let missing = missingBucket(bucket) { return .respond(missing) }
            return uploads.bucketUploads(context, bucket)
        }
        switch context.method {
        case "GET": return .respond(list(context, bucket))
        case "HEAD": return .respond(run(bucket) { Reply.empty(200) })
        case "PUT": return createBucket(context, bucket)
        case "DELETE": return .respond(deleteBucket(context, bucket))
        case "POST": return postPolicyUpload(context, bucket)
        default: return .respond(Self.methodNotAllowed(context, allowed: "GET, HEAD, PUT, DELETE, POST"))
        }
    }

    /// `/{bucket}/{object}`: reads, uploads, copies, deletes; multipart and resumable uploads go to their hooks.
    package func object(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        let query = context.query
        if query.contains("uploads") || query.contains("uploadId") {
            return multipartUpload(context, bucket, name)
        }
        if query.contains("upload_id") || context.headers["x-goog-resumable"] != nil {
            return resumableUpload(context, bucket, name)
        }
        switch context.method {
        case "GET", "HEAD": return .respond(read(context, bucket, name))
        case "PUT":
            if let source = context.headers["x-goog-copy-source"] { return copy(context, bucket, name, source: source) }
            return upload(context, bucket, name)
        case "DELETE": return .respond(delete(context, bucket, name))
        default: return .respond(Self.methodNotAllowed(context, allowed: "GET, HEAD, PUT, DELETE, POST"))
        }
    }

    // MARK: The upload protocols the XML API serves on object paths

    /// XML multipart uploads: `POST ?uploads`, `PUT ?partNumber=&uploadId=`, `GET`/`POST`/`DELETE ?uploadId=`
    /// (docs/xml-multipart.md).
    func multipartUpload(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        if let missing = missingUploadBucket(bucket) { return .respond(missing) }
        return uploads.multipart(context, bucket, name)
    }

    /// XML resumable uploads: `POST` with `x-goog-resumable: start`, then `PUT ?upload_id=` (docs/xml-multipart.md).
    func resumableUpload(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        if let missing = missingUploadBucket(bucket) { return .respond(missing) }
        return uploads.resumable(context, bucket, name)
    }

    /// `POST /{bucket}`: HTML form uploads with a signed policy.
    func postPolicyUpload(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        PostPolicyUpload(service: service).handle(context, bucket)
    }

    // MARK: Buckets

    /// `PUT /{bucket}` (gsutil's `mb` in XML mode): a bucket with GCS's defaults. A body
    /// (`<CreateBucketConfiguration>` with a location) is read up to the JSON bound and not used: one server has
    /// one location.
    private func createBucket(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.xmlError($0) }) { _ in
                do {
                    _ = try GCSBucketRoutes(service: service).create(
                        bucket, ["name": .string(bucket.rawValue)], enableObjectRetention: false,
                        project: context.headers["x-goog-project-id"], time: context.time)
                    return Reply.empty(200)
                } catch let error as StorageError where error.code == .alreadyExists || error.code == .conflict {
                    return Reply.xmlError(error, code: XMLErrorCode.bucketAlreadyOwnedByYou)
                } catch {
                    return Reply.xmlError(error)
                }
            })
    }

    /// `DELETE /{bucket}`: only an empty bucket (409 `BucketNotEmpty`), as the JSON API deletes it.
    private func deleteBucket(_ context: RequestContext, _ bucket: BucketName) -> HTTPResponse {
        run(bucket) {
            do {
                try GCSBucketRoutes(service: service).delete(bucket, conditions: .none, time: context.time)
            } catch let error as StorageError where error.code == .conflict || error.code == .alreadyExists {
                return Reply.xmlError(error, code: XMLErrorCode.bucketNotEmpty)
            }
            return Reply.empty(204)
        }
    }

    // MARK: Errors

    /// Runs `body` once `bucket` is known to exist: a missing bucket is `NoSuchBucket`, any other 404 in `body`
    /// (an object) `NoSuchKey`.
    package func run(_ bucket: BucketName, _ body: () throws -> HTTPResponse) -> HTTPResponse {
        if let missing = missingBucket(bucket) { return missing }
        do { return try body() } catch { return Reply.xmlError(error) }
    }

    /// The answer for a bucket that does not exist (or is not served), or nil when it exists.
    package func missingBucket(_ bucket: BucketName) -> HTTPResponse? {
        do {
            try service.requireBucket(bucket)
            return nil
        } catch {
            return Reply.xmlError(error, code: XMLErrorCode.noSuchBucket)
        }
    }

    /// ``missingBucket(_:)`` for an upload, which in emulator mode creates the bucket it names
    /// (``ObjectService/checkUploadBucket(_:)``).
    package func missingUploadBucket(_ bucket: BucketName) -> HTTPResponse? {
        do {
            try service.checkUploadBucket(bucket)
            return nil
        } catch {
            return Reply.xmlError(error, code: XMLErrorCode.noSuchBucket)
        }
    }

    /// 405 with the `Allow` header RFC 9110 §15.5.6 asks for.
    package static func methodNotAllowed(_ context: RequestContext, allowed: String) -> HTTPResponse {
        Reply.xmlError(
            StorageError(.methodNotAllowed, "The specified method \(context.method.prefix(20)) is not allowed here"),
            headers: ["Allow": allowed])
    }
}
