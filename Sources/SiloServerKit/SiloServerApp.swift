public import SiloCore
public import SiloHTTP
import SiloWire
import Synchronization

/// The Silo HTTP application: routes requests to the APIs it is given (``RouteGroup``) over the given stores. It
/// knows protocols only; the APIs, the stores and the transport are chosen by its composition (SiloServer, and the
/// executable).
public final class SiloServerApp: HTTPHandler {
    let service: ObjectService
    let registry = SessionRegistry()
    /// When lifecycle rules last ran: they scan whole buckets, so at most hourly (maintenance passes are more often).
    private let lifecycleRan = Mutex<Int64>(.min)
    /// Every request's path through routing, auth, access, the handler, CORS and error rendering.
    let pipeline: RequestPipeline
    /// How a resumable session commits (``sessionCommit(_:_:)``), for the worker pipeline's groups.
    let sessionCommit: SessionCommit
    /// Makes the same pipeline over a service that refuses to block, one per socket thread (``InlinePipeline``).
    private let makeInlinePipeline: @Sendable (InlineAttempt) -> RequestPipeline
    /// Request metrics, the access log and the metric sources `/metrics` reports.
    public let observability: Observability

    /// `credentials` turns `Authorization` headers into principals; the executable chooses it (the server knows
    /// no token format of its own). `apis` are asked in order for each route; `thumbnails` makes the thumbnail
    /// service from the configuration's settings.
    package init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore,
        policy: any AccessPolicy = AllowAllPolicy(), credentials: any CredentialVerifier, logger: Logger,
        observability: Observability = Observability(), apis: [any RouteGroup.Type],
        thumbnails: (ImageSettings, Logger) -> any ThumbnailService
    ) {
        // Replaceable whatever the caller passed: `PUT /internal/setRules` swaps the rules in force.
        let policy = policy as? SwappableAccessPolicy ?? SwappableAccessPolicy(policy)
        service = ObjectService(
            configuration: configuration, metadata: metadata, blobs: blobs, policy: policy, credentials: credentials,
            logger: logger, thumbnails: thumbnails(configuration.images, logger))
        self.observability = observability
        let readiness = ReadinessProbe(timeout: configuration.readinessTimeoutSeconds)
        sessionCommit = Self.sessionCommit(service, apis)
        let router = Router(apis, configuration)
        pipeline = RequestPipeline(
            service: service, router: router, registry: registry, sessionCommit: sessionCommit,
            observability: observability, readiness: readiness)
        let (service, registry) = (service, registry)
        makeInlinePipeline = { attempt in
            let inline = service.inlineView(attempt)
            return RequestPipeline(
                service: inline, router: router, registry: registry, sessionCommit: Self.sessionCommit(inline, apis),
                observability: observability, readiness: readiness)
        }
    }

    public func begin(_ head: HTTPRequestHead) -> RequestDisposition { pipeline.begin(head) }

    /// A new ``InlinePipeline``: the answers a socket thread may give without blocking.
    public func makeInlineAnswerer() -> (any InlineAnswerer)? {
        let attempt = InlineAttempt()
        return InlinePipeline(inline: makeInlinePipeline(attempt), attempt: attempt, worker: pipeline)
    }

    /// Where a request goes (the fault handler names operations by it); throws the error that refused its target.
    package func route(of head: HTTPRequestHead) throws -> Route {
        do { return try pipeline.route(of: head) } catch { throw error.error }
    }

    /// Every operation id the APIs name (``RouteGroup/operationIDs``).
    package var operationIDs: Set<String> { pipeline.router.groups.reduce(into: []) { $0.formUnion($1.operationIDs) } }

    /// How a resumable session commits: as the principal that started it (verified then; the session keeps it
    /// without the credential), decided again against the version the commit replaces, by the rule of the API that
    /// started it (``RouteGroup/commitAccess(_:)``: Security Rules for a v0 session, bucket IAM and ACLs for a GCS
    /// JSON or XML one); a session no API claims is refused. Any session may create the bucket in emulator mode.
    private static func sessionCommit(_ service: ObjectService, _ apis: [any RouteGroup.Type]) -> SessionCommit {
        SessionCommit(
            principal: { $0.starter },
            access: { session in apis.lazy.compactMap { $0.commitAccess(session.api) }.first ?? .refused },
            createsBucket: { _ in service.configuration.createBucketsOnUpload })
    }

    /// What the app was built with (the executable reads the maintenance schedule from it).
    public var configuration: ServerConfiguration { service.configuration }
    /// The server's log (for what the executable does around it: reloads, shutdown).
    public var logger: Logger { service.logger }

    /// Runs one pass of background maintenance: lifecycle rules, soft-delete purges, expiry of stale sessions and
    /// deletion of unreferenced blobs registered more than `graceSeconds` ago (`configuration.garbageGraceSeconds`),
    /// all as of `now`.
    public func collectGarbage(graceSeconds: Int64, now: Timestamp = .now()) -> (sessions: Int, blobs: Int) {
        collectGarbage(
            blobsRegisteredBefore: Timestamp(microseconds: now.microseconds - max(0, graceSeconds) * 1_000_000),
            now: now)
    }

    /// The same pass with the blobs' cutoff given outright: at startup, a process that alone writes its store (SQLite
    /// holds a lock on its file) takes everything registered before it started, which only a crash can have left.
    /// Whatever the cutoff, a blob goes only once the store hands it over, so a commit racing the pass either keeps
    /// its blob or fails with a 503 that the client retries; never a 200 without bytes.
    public func collectGarbage(blobsRegisteredBefore cutoff: Timestamp, now: Timestamp = .now()) -> (
        sessions: Int, blobs: Int
    ) {
        let lifecycle = lifecycleRan.withLock { last in
            guard last == .min || now.microseconds - last >= Self.lifecycleInterval else { return false }
            last = now.microseconds
            return true
        }
        return Maintenance.run(
            service: service, registry: registry, blobsRegisteredBefore: cutoff, now: now, lifecycle: lifecycle)
    }

    static let lifecycleInterval: Int64 = 3_600 * 1_000_000

    /// Returns once the blob deletions that answered requests queued (``BlobReclaimer``) are done: for tests and tools
    /// that look at the blob store right after an overwrite or a delete.
    public func waitForBlobReclaims() { service.reclaimer.wait() }
}
