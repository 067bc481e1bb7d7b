import SiloCore
import SiloHTTP
import SiloServerKit

extension XMLRoutes {
    /// `PUT /{bucket}/{object}` with the object's bytes as the body, streamed into a new blob. Metadata, canned ACL,
    /// conditions and declared digests are checked before the first byte is read; the digests against the bytes
    /// before the version is made live.
    package func upload(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> RequestDisposition {
        if let missing = missingUploadBucket(bucket) { return .respond(missing) }
        let digests: XMLObjectHeaders.Digests
        do { digests = try XMLObjectHeaders.Digests(context.headers) } catch {
            return .respond(Reply.xmlError(error, code: XMLErrorCode.invalidDigest))
        }
        do {
            let fields = try XMLObjectHeaders.fields(context, service: service, bucket: bucket, name: name)
            let conditions = try XMLObjectHeaders.conditions(context.headers)
            if let declared = context.declaredBodyLength { try service.checkObjectSize(declared, "\(bucket)/\(name)") }
            let ingest = try BlobIngest(service: service, time: context.time)
            return .readBody(
                MediaUploadSink(ingest: ingest, fail: { Reply.xmlError($0) }) { ingest, blob in
                    do {
                        try UploadChecks.verify(
                            blob.summary, md5: digests.md5, crc32c: digests.crc32c, object: "\(bucket)/\(name)")
                    } catch {
                        ingest.discard()
                        return Reply.xmlError(error, code: XMLErrorCode.badDigest)
                    }
                    // Access was decided before the body was read (RequestPipeline.xml), and is decided again
                    // here against the version this replaces.
                    let record = try service.commitUpload(
                        bucket: bucket, name: name, blob: blob, fields: fields,
                        conditions: conditions, principal: context.principal, access: .gcs, time: Timestamp.now(),
                        createsBucket: service.configuration.createBucketsOnUpload)
                    return Reply.empty(200, headers: XMLObjectHeaders.written(record))
                })
        } catch {
            return .respond(Reply.xmlError(error))
        }
    }

    /// `DELETE /{bucket}/{object}`: the live version, or `?generation=`; `x-goog-if-*` conditions, holds and
    /// retention checked in the store's transaction.
    package func delete(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> HTTPResponse {
        run(bucket) {
            try service.deleteObject(
                bucket, name, generation: try GCSConditions.generation(context.query),
                conditions: try XMLObjectHeaders.conditions(context.headers), time: context.time)
            return Reply.empty(204)
        }
    }
}
