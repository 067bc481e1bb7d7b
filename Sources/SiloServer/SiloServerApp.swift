public import SiloCore
public import SiloHTTP
import SiloWire

/// The Silo HTTP application: routes requests to the v0 API (and later the GCS JSON API) over the given stores.
/// It knows protocols only; the stores and the transport are chosen by the executable.
public final class SiloServerApp: HTTPHandler {
    let service: ObjectService
    let registry = SessionRegistry()
    let firebase: FirebaseRoutes

    public init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore,
        policy: any AccessPolicy = AllowAllPolicy(), logger: Logger
    ) {
        service = ObjectService(
            configuration: configuration, metadata: metadata, blobs: blobs, policy: policy, logger: logger)
        firebase = FirebaseRoutes(service: service, registry: registry)
    }

    public func begin(_ head: HTTPRequestHead) -> RequestDisposition {
        if head.method == "OPTIONS" { return .respond(CORS.preflight(head)) }
        let disposition = route(head)
        guard head.headers["Origin"] != nil else { return disposition }
        switch disposition {
        case .respond(var response):
            CORS.decorate(&response, request: head)
            return .respond(response)
        case .readBody(let sink):
            return .readBody(DecoratingSink(sink) { CORS.decorate(&$0, request: head) })
        }
    }

    private func route(_ head: HTTPRequestHead) -> RequestDisposition {
        let context = RequestContext(head: head, emulatorAdmin: service.configuration.emulatorAdminCredentials)
        let route: Route
        do { route = try Route.parse(head.rawPath) } catch { return .respond(Reply.firebaseError(error)) }
        switch route {
        case .probe:
            return .respond(Reply.json(200, .object(["emulator": .string("storage"), "server": .string("silo")])))
        case .firebaseBucket(let bucket):
            return firebase.bucket(context, bucket)
        case .firebaseObject(let bucket, let name):
            return firebase.object(context, bucket, name)
        case .internalReset:
            guard head.method == "POST" else { break }
            guard context.principal?.isAdmin == true || service.policy is AllowAllPolicy else {
                return .respond(Reply.firebaseError(StorageError(.permissionDenied, "Missing admin credentials.")))
            }
            do {
                try service.metadata.reset()
                return .respond(Reply.empty(200))
            } catch {
                return .respond(Reply.firebaseError(error))
            }
        case .unknown:
            break
        }
        return .respond(
            Reply.firebaseError(
                StorageError(.notFound, "Not Found. No route for \(head.method) \(head.rawPath.prefix(200))")))
    }

    /// Runs one pass of background maintenance: expires stale sessions and deletes unreferenced blobs older than
    /// `graceSeconds` (0 at startup, when no request can be in flight).
    public func collectGarbage(graceSeconds: Int64) -> (sessions: Int, blobs: Int) {
        Maintenance.run(service: service, registry: registry, graceSeconds: graceSeconds)
    }
}

/// Lets the app post-process the response a body sink produces (CORS headers).
private final class DecoratingSink: RequestBodySink {
    private let inner: any RequestBodySink
    private let decorate: (inout HTTPResponse) -> Void

    init(_ inner: any RequestBodySink, decorate: @escaping (inout HTTPResponse) -> Void) {
        self.inner = inner
        self.decorate = decorate
    }

    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard var response = inner.receive(chunk) else { return nil }
        decorate(&response)
        return response
    }

    func finish() -> HTTPResponse {
        var response = inner.finish()
        decorate(&response)
        return response
    }

    func abort() { inner.abort() }
}
