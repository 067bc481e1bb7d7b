import SiloCore
import SiloHTTP
import SiloServerKit

extension XMLRoutes {
    /// `/{bucket}?{sub}` and `/{bucket}/{object}?{sub}`: ACLs of buckets and objects, the bucket's default object
    /// ACL, and bucket configuration read from (and, for versioning, written to) the JSON API's bucket resource.
    package func subresource(
        _ context: RequestContext, _ bucket: BucketName, _ name: ObjectName?, _ sub: XMLSubresource
    )
        -> RequestDisposition
    {
        if let missing = missingBucket(bucket) { return .respond(missing) }
        switch (sub, name) {
        case (.unserved(let key), _):
            return .respond(
                Reply.xmlError(StorageError(.unimplemented, "?\(key) is not implemented by this server")))
        case (.acl, let name):
            return accessControl(context, bucket, name.map { .object($0) } ?? .bucket)
        case (_, .some):
            return .respond(
                Reply.xmlError(
                    StorageError(.unimplemented, "?\(sub.key) is a bucket sub-resource; objects have none here")))
        case (.defaultObjectAcl, nil):
            return accessControl(context, bucket, .defaultObject)
        case (.versioning, nil) where context.method == "PUT":
            return putVersioning(context, bucket)
        case (_, nil):
            return .respond(bucketConfiguration(context, bucket, sub))
        }
    }
}
