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
    /// The same pipeline over store views that refuse to block, for answers on the socket's thread.
    private let inlinePipeline: RequestPipeline
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
        pipeline = RequestPipeline(
            service: service, groups: apis, registry: registry, sessionCommit: Self.sessionCommit(service, apis),
            observability: observability, readiness: readiness)
        let inline = service.inlineView()
        inlinePipeline = RequestPipeline(
            service: inline, groups: apis, registry: registry, sessionCommit: Self.sessionCommit(inline, apis),
            observability: observability, readiness: readiness, inline: true)
    }

    public func begin(_ head: HTTPRequestHead) -> RequestDisposition { pipeline.begin(head) }

    /// Answers on the caller's thread when the whole answer is in memory: a GET or HEAD of an object's bytes or
    /// metadata whose live version the metadata store holds in memory (``MetadataStore/cachedObject(_:_:)``),
    /// whose bytes are in ``SmallBlobCache``, with a credential verifiable without I/O. The request runs through the
    /// same pipeline as on a worker, over store views that refuse every call that would block; the first refusal
    /// marks the attempt, and the answer is dropped: the worker then carries on from the route and the context the
    /// attempt established (``PendingRequest``), so neither is made twice. Refusals come before any write — the
    /// views refuse writes without calling the store — so a declined attempt leaves nothing changed: the first v0
    /// read of an object without a download token, which writes one, goes to the worker whole. (What may change is
    /// memory only: ``VersionResponseCache`` memoizes the headers it derived, exact under their version.)
    public func beginInline(_ head: HTTPRequestHead) -> InlineDisposition {
        guard head.method == "GET" || head.method == "HEAD" else { return .declined }
        // A path that does not parse is answered on the worker, whole (rare; nothing to save).
        guard let route = try? pipeline.route(of: head) else { return .declined }
        // Only a read of one object can be answered inline: anything else goes on unauthenticated, so that no
        // credential is verified on the loop for an answer the loop cannot give.
        // No request id yet: a declined attempt needs none (the worker's ``RequestPipeline/resume`` makes it).
        var exchange = Exchange(id: nil)
        exchange.routed(route, head)
        guard route.readsOneObject else { return .deferred(PendingRequest(pipeline, route, head, nil, exchange)) }
        // Read before the attempt: a write or a reload that lands during it leaves the answer's permit out of date.
        let stamp: ReplayableAnswer.Stamp? =
            if head.wantsReplayPermit, case .firebaseObject(let bucket, let name) = route {
                ReplayableAnswer.Stamp(service, bucket, name)
            } else {
                nil
            }
        return InlineAttempt.run { attempt in
            let admission = inlinePipeline.admit(route, head, &exchange)
            // A credential that needed the store (a signed URL's HMAC key) is verified again on the worker: a
            // refused read, even one a step took with `try?`, may have left a principal that is not the real one.
            guard !attempt.refused else {
                exchange.caller = .anonymous
                return .deferred(PendingRequest(pipeline, route, head, nil, exchange))
            }
            let context: RequestContext
            switch admission {
            case .admitted(let admitted):
                context = admitted
            case .refused(var response):
                inlinePipeline.finish(&response, head, exchange)
                return .answered(.respond(response))
            }
            switch inlinePipeline.dispatch(route, context) {
            case .respond(var response) where !attempt.refused:
                inlinePipeline.finish(&response, head, exchange)
                response.replay = ReplayableAnswer.admit(
                    response, head, context, exchange, stamp: stamp, attempt: attempt, service: service,
                    observability: observability)
                return .answered(.respond(response))
            case .respond:
                break
            case .readBody(let sink):
                // No object read takes a body; should one ever, it is read on a worker.
                sink.abort()
            }
            return .deferred(PendingRequest(pipeline, route, head, context, exchange))
        }
    }

    /// Where a request goes (the fault handler names operations by it).
    package func route(of head: HTTPRequestHead) throws -> Route { try pipeline.route(of: head) }

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
