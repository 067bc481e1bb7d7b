public import SiloCore
public import SiloHTTP
import SiloWire
import Synchronization

/// The Silo HTTP application: routes requests to the v0 API, the GCS JSON API and the XML API over the given stores.
/// It knows protocols only; the stores and the transport are chosen by the executable.
public final class SiloServerApp: HTTPHandler {
    let service: ObjectService
    let registry = SessionRegistry()
    /// When lifecycle rules last ran: they scan whole buckets, so at most hourly (maintenance passes are more often).
    private let lifecycleRan = Mutex<Int64>(.min)
    /// Every request's path through routing, auth, access, the handler, CORS and error rendering.
    let pipeline: RequestPipeline

    /// `credentials` turns `Authorization` headers into principals; the executable chooses it (the server knows
    /// no token format of its own).
    public init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore,
        policy: any AccessPolicy = AllowAllPolicy(), credentials: any CredentialVerifier, logger: Logger
    ) {
        service = ObjectService(
            configuration: configuration, metadata: metadata, blobs: blobs, policy: policy, credentials: credentials,
            logger: logger)
        pipeline = RequestPipeline(service: service, registry: registry, sessionCommit: Self.sessionCommit(service))
    }

    public func begin(_ head: HTTPRequestHead) -> RequestDisposition { pipeline.begin(head) }

    /// Where a request goes (the fault handler names operations by it).
    func route(of head: HTTPRequestHead) throws -> Route { try pipeline.route(of: head) }

    /// How a resumable session commits, by the API that started it: GCS sessions (JSON and XML API) were
    /// authorized as admin tooling when they started; v0 sessions act as their starter and may create the bucket.
    private static func sessionCommit(_ service: ObjectService) -> SessionCommit {
        SessionCommit(
            principal: { session in
                session.api != .firebase
                    ? GCSUploads.admin
                    : (try? service.credentials.authenticate(
                        authorizationHeader: session.principal, at: session.created)) ?? nil
            },
            createsBucket: { $0.api == .firebase && service.configuration.createBucketsOnUpload })
    }

    /// What the app was built with (the executable reads the maintenance schedule from it).
    public var configuration: ServerConfiguration { service.configuration }

    /// Runs one pass of background maintenance: lifecycle rules, soft-delete purges, expiry of stale sessions and
    /// deletion of unreferenced blobs older than `graceSeconds` (0 at startup, when no request can be in flight;
    /// `configuration.garbageGraceSeconds` afterwards), all as of `now`.
    public func collectGarbage(graceSeconds: Int64, now: Timestamp = .now()) -> (sessions: Int, blobs: Int) {
        let lifecycle = lifecycleRan.withLock { last in
            guard last == .min || now.microseconds - last >= Self.lifecycleInterval else { return false }
            last = now.microseconds
            return true
        }
        return Maintenance.run(
            service: service, registry: registry, graceSeconds: graceSeconds, now: now, lifecycle: lifecycle)
    }

    static let lifecycleInterval: Int64 = 3_600 * 1_000_000
}
