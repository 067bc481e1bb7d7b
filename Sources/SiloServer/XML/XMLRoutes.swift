import SiloCore
import SiloHTTP

/// The GCS XML API (wire spec §XML): objects addressed as `/{bucket}/{object}`, as gsutil's XML mode, Rust's
/// object_store, signed URLs and pasted `storage.googleapis.com` links use it.
struct XMLRoutes {
    let service: ObjectService
    let download: DownloadResponder
    let uploads: XMLUploadRoutes

    /// `/{bucket}`: object listing, POST policy form uploads.
    func bucket(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        if let upload = uploads.bucket(context, bucket) { return upload }
        return .respond(
            run {
                try service.requireBucket(bucket)
                throw StorageError(.unimplemented, "XML API bucket requests are not implemented yet")
            })
    }

    /// `/{bucket}/{object}`: media reads and writes, copies, multipart uploads.
    func object(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        if let upload = uploads.object(context, bucket, name) { return upload }
        return .respond(
            run {
                try service.requireBucket(bucket)
                throw StorageError(.unimplemented, "XML API object requests are not implemented yet")
            })
    }

    func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.xmlError(error) }
    }
}
