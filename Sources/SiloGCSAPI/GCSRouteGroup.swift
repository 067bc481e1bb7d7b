package import SiloCore
package import SiloHTTP
package import SiloServerKit
import SiloWire

/// Google Cloud Storage's APIs: the JSON API (with its batch endpoint, HMAC keys, the project's service agent and
/// the OAuth token endpoint its clients exchange service-account keys at) and the XML API. In emulator mode every caller is the admin (as in the Firebase emulator, whose GCS clients cannot
/// send `owner`), and so is a caller with an admin key; everyone else — service accounts, callers GCS grants the
/// public (`allUsers`, `allAuthenticatedUsers`) — needs the permissions the bucket's IAM policy and ACLs give them
/// (``GCSAccess``), decided before the handler runs.
package struct GCSRouteGroup: RouteGroup {
    let service: ObjectService
    let objects: GCSObjectRoutes
    let buckets: GCSBucketRoutes
    let uploads: GCSUploads
    let batch: BatchRoutes
    let xml: XMLRoutes
    /// The names a `fields` selector may use, built from the OpenAPI document when the group is made, so that no
    /// request (on an event loop, perhaps) pays for parsing the document.
    let fieldVocabulary = FieldVocabulary.gcs

    package init(_ parts: RouteGroupParts) {
        let service = parts.service
        self.service = service
        let download = DownloadResponder(service: service)
        objects = GCSObjectRoutes(service: service, download: download)
        buckets = GCSBucketRoutes(service: service)
        let sessions = ResumableSessions(service: service, registry: parts.registry, commit: parts.sessionCommit)
        uploads = GCSUploads(
            service: service, sessions: sessions, commandResumable: CommandResumable(sessions),
            rangeResumable: RangeResumable(sessions))
        batch = BatchRoutes(configuration: service.configuration)
        xml = XMLRoutes(
            service: service, download: download,
            uploads: XMLUploadRoutes(service: service, registry: parts.registry, sessions: sessions))
    }

    /// A virtual-host request (`Host: {bucket}.{suffix}`) is the XML API's whatever its path, and so is `GET /` with
    /// `x-goog-project-id` (the project's buckets).
    package static let routesByHead = true

    package static func route(byHead head: HTTPRequestHead, _ configuration: ServerConfiguration) throws
        -> (any RouteTarget)?
    {
        if let bucket = VirtualHost.bucket(host: head.headers["Host"], suffixes: configuration.virtualHostSuffixes) {
            return GCSTarget(try GCSRoute.parseVirtualHost(head.rawPath, bucket: bucket))
        }
        if head.rawPath == "/" && XMLRoutes.listsBuckets(head) { return GCSTarget(.xmlBuckets) }
        return nil
    }

    package static func route(path rawPath: String) throws -> (any RouteTarget)? {
        try GCSRoute.parse(rawPath).map(GCSTarget.init)
    }

    /// The XML API's path style: any first segment that is a valid bucket name, once nothing else claimed the path.
    package static func route(unclaimedPath rawPath: String) throws -> (any RouteTarget)? {
        try GCSRoute.parseXML(rawPath).map(GCSTarget.init)
    }

    package static func refusedLabel(_ rawPath: String) -> RouteLabel { GCSTarget.refusedLabel(rawPath) }

    package static var operationIDs: Set<String> { GCSRoute.operationIDs }

    package func handle(_ target: any RouteTarget, _ context: RequestContext, _ pipeline: RequestPipeline) throws
        -> RequestDisposition?
    {
        guard let route = (target as? GCSTarget)?.route else { return nil }
        switch route {
        case .oauthToken:
            return TokenEndpoint(service: service).handle(context)
        case .batch:
            return batch.handle(context) { head, body in pipeline.dispatchBatchCall(head, body) }
        case .gcsBuckets, .gcsBucket, .gcsObjects, .gcsObject, .gcsCopy, .gcsCompose, .gcsUpload, .gcsBucketSub,
            .gcsObjectSub, .gcsServiceAccount, .gcsHMACKeys, .gcsUnimplemented:
            return try json(route, context)
        case .xmlBucket, .xmlObject, .xmlSubresource, .xmlBuckets:
            return xml(route, context)
        case .unknown:
            return nil
        }
    }

    /// The XML API's routes answer errors in XML, the JSON API's in JSON; a path that did not parse is left to the
    /// kit (GCS JSON's shape), and one that names nothing outside the JSON API's paths is answered as the kit
    /// answers any path that names nothing (v0's shape, as the Firebase emulator answers it).
    package func errorShape(for target: (any RouteTarget)?, rawPath: String) -> (any ErrorShape)? {
        guard let route = (target as? GCSTarget)?.route else { return nil }
        if route.isXML { return XMLErrorShape() }
        if case .unknown(let jsonAPIPath) = route { return jsonAPIPath ? GCSJSONAPIErrorShape() : FirebaseErrorShape() }
        return GCSJSONAPIErrorShape()
    }

    /// GCS sessions (JSON, XML resumable and multipart) commit under bucket IAM and ACLs.
    package static func commitAccess(_ api: UploadSession.API) -> WriteAccess? {
        switch api {
        case .gcs, .xml, .xmlMultipart, .xmlPart: .gcs
        case .firebase: nil
        }
    }

    /// The JSON API: access, then the `fields` check, then the handler, whose answer the selector renders.
    private func json(_ route: GCSRoute, _ context: RequestContext) throws -> RequestDisposition {
        let decision = GCSAccess(service: service).decide(route, context)
        if let refusal = decision.refusal { return .respond(Reply.gcsError(refusal)) }
        var context = context
        context.decided = decision.decided
        // Checked before the handler runs, so a refused selector changes nothing.
        let partial: PartialResponse?
        do { partial = try PartialResponse.of(context, fieldVocabulary) } catch {
            return .respond(PartialResponse.refusal(error))
        }
        let disposition = try jsonHandler(route, context)
        return partial?.render(disposition) ?? disposition
    }

    /// The JSON API's handler for `route`, after access and the `fields` check.
    private func jsonHandler(_ route: GCSRoute, _ context: RequestContext) throws -> RequestDisposition {
        switch route {
        case .gcsBuckets: return buckets.buckets(context)
        case .gcsBucket(let bucket): return buckets.bucket(context, bucket)
        case .gcsBucketSub(let bucket, let path): return buckets.sub(context, bucket, path)
        case .gcsObjectSub(let bucket, let name, let path): return try objects.sub(context, bucket, name, path)
        case .gcsObjects(let bucket):
            guard context.method == "GET" || context.method == "HEAD" else { return uploads.handle(context, bucket) }
            return .respond(objects.list(context, bucket))
        case .gcsObject(let bucket, let name): return try objects.object(context, bucket, name)
        case .gcsCopy(let source, let sourceName, let destination, let destinationName, let rewrite):
            guard context.method == "POST" else { return .respond(Self.postOnly(context)) }
            return objects.copy(
                context, from: (source, sourceName), to: (destination, destinationName), rewrite: rewrite)
        case .gcsCompose(let bucket, let name):
            guard context.method == "POST" else { return .respond(Self.postOnly(context)) }
            return objects.compose(context, bucket, name)
        case .gcsUpload(let bucket): return uploads.handle(context, bucket)
        case .gcsHMACKeys(let project, let accessID):
            return HMACKeys(service: service).handle(context, project: project, accessID: accessID)
        case .gcsUnimplemented(let what):
            return .respond(
                Reply.gcsError(StorageError(.unimplemented, "\(what) are not implemented by this server")))
        case .gcsServiceAccount:
            // GCS names the project's service agent; Silo has none, so a stable address of the same shape.
            return .respond(
                Reply.json(
                    200,
                    .object([
                        "kind": .string("storage#serviceAccount"),
                        "email_address": .string(
                            "service-\(ProjectACL.projectNumber)@gs-project-accounts.iam.gserviceaccount.com"),
                    ])))
        default: return .respond(Reply.gcsError(StorageError(.notFound, "Not Found")))
        }
    }

    /// The XML API, under the same access rule as the JSON API (a signed URL's signer is its caller); a signed
    /// `x-goog-content-length-range` bounds the upload's body.
    private func xml(_ route: GCSRoute, _ context: RequestContext) -> RequestDisposition {
        let decision = GCSAccess(service: service).decide(route, context)
        if let refusal = decision.refusal { return .respond(Reply.xmlError(refusal)) }
        var context = context
        context.decided = decision.decided
        return ContentLengthRange.bound(context) {
            switch route {
            case .xmlBucket(let bucket): xml.bucket(context, bucket)
            case .xmlObject(let bucket, let name): xml.object(context, bucket, name)
            case .xmlSubresource(let bucket, let name, let sub): xml.subresource(context, bucket, name, sub)
            case .xmlBuckets: .respond(xml.buckets(context))
            default: .respond(Reply.xmlError(StorageError(.notFound, "Not Found")))
            }
        }
    }

    /// copyTo, rewriteTo and compose write: a GET of their URL must not (GCS takes them as POST only).
    private static func postOnly(_ context: RequestContext) -> HTTPResponse {
        Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported here; use POST"))
    }
}
