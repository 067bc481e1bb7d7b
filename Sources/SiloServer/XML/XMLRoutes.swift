import SiloCore
import SiloHTTP

/// The GCS XML API (wire spec §XML): objects addressed as `/{bucket}/{object}`, as gsutil's XML mode, Rust's
/// object_store, signed URLs and pasted `storage.googleapis.com` links use it.
struct XMLRoutes {
    let service: ObjectService
    let download: DownloadResponder

    /// `/{bucket}`: object listing, POST policy form uploads.
    func bucket(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        // HTML form uploads, signed with a POST policy or not.
        if context.method == "POST" { return PostPolicyUpload(service: service).handle(context, bucket) }
        return .respond(
            run {
                try service.requireBucket(bucket)
                throw StorageError(.unimplemented, "XML API bucket requests are not implemented yet")
            })
    }

    /// `/{bucket}/{object}`: media reads and writes, copies, multipart uploads.
    func object(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        .respond(
            run {
                try service.requireBucket(bucket)
                throw StorageError(.unimplemented, "XML API object requests are not implemented yet")
            })
    }

    func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.xmlError(error) }
    }
}
