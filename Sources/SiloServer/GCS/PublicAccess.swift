import SiloCore
import SiloHTTP
import SiloWire

/// What GCS lets a caller without project rights do: read an object (metadata or bytes) whose ACL grants `allUsers`
/// READER, or any object of a bucket whose IAM policy grants `allUsers` a viewer role (which also lets it list);
/// `allAuthenticatedUsers` likewise for callers with a verified token. Uniform bucket-level access turns the ACL
/// half off, as in GCS. Everything else stays admin-only.
struct PublicAccess {
    let service: ObjectService

    func allows(_ route: Route, _ context: RequestContext) -> Bool {
        guard context.method == "GET" || context.method == "HEAD" else { return false }
        do {
            switch route {
            case .gcsObject(let bucket, let name), .xmlObject(let bucket, let name):
                guard let resource = try service.bucketResource(bucket) else { return false }
                if grantsBucket(resource, context) { return true }
                guard !resource.uniformBucketLevelAccess, !resource.publicAccessPreventionEnforced,
                    let record = try service.metadata.object(
                        bucket, name, generation: try GCSConditions.generation(context.query))
                else { return false }
                let acl = ACLEntry.parse(record.fields.extras.acl) ?? []
                return acl.contains { grants($0.entity, context) }
            case .gcsObjects(let bucket), .xmlBucket(let bucket):
                guard let resource = try service.bucketResource(bucket) else { return false }
                if grantsBucket(resource, context) { return true }
                // A legacy bucket ACL that lets the public read the bucket lets it list.
                let closed = resource.uniformBucketLevelAccess || resource.publicAccessPreventionEnforced
                let acl = closed ? nil : GCSAccessControlRoutes.entries(resource.fields["acl"])
                return (acl ?? []).contains { grants($0.entity, context) }
            default:
                return false
            }
        } catch {
            return false
        }
    }

    private func grantsBucket(_ resource: BucketResource, _ context: RequestContext) -> Bool {
        !resource.publicAccessPreventionEnforced && BucketIAM.publicReaders(resource).contains { grants($0, context) }
    }

    private func grants(_ member: String, _ context: RequestContext) -> Bool {
        member == "allUsers" || (member == "allAuthenticatedUsers" && context.principal?.verified == true)
    }
}
