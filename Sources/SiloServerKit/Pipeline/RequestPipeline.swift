import SiloCore
package import SiloHTTP
import SiloWire

/// The one path every request takes, for every API, each step once: routing → authentication (credentials →
/// principal, ``RequestContext``) → served-bucket check → the route's group (``RouteGroup``) → CORS, the log line of
/// a server-side failure, the request's metrics, `X-Request-Id` and its access-log line (``finish(_:_:_:)``).
/// What fails before a handler is answered here, in the shape of the API the route names (``errorShape(_:rawPath:)``).
/// Groups get what the pipeline established — the route's bucket and object, the context with its principal — and
/// return a disposition; each decides its own access (GCS's IAM and ACLs before its handler, v0's Security Rules
/// inside it, because a rule reads the resource the operation is about and, for writes, the one it proposes).
///
/// The same pipeline also runs inline, over an ``ObjectService/inlineView(_:)`` that refuses to block
/// (``InlinePipeline``): one code path for both.
package struct RequestPipeline: Sendable {
    let service: ObjectService
    /// The APIs (``RouteGroup``), in the router's order.
    let groups: [any RouteGroup]
    let router: Router
    let operations: OperationsRoutes
    let observability: Observability
    /// The stages every request passes, in order (``begin(_:)``); access is decided by each API's group.
    let authentication: Authentication
    let servedBuckets: ServedBuckets
    let observation: Observation

    init(
        service: ObjectService, router: Router, registry: SessionRegistry, sessionCommit: SessionCommit,
        observability: Observability, readiness: ReadinessProbe
    ) {
        self.service = service
        self.router = router
        self.observability = observability
        operations = OperationsRoutes(service: service, observability: observability, readiness: readiness)
        authentication = Authentication(
            credentials: service.credentials, edge: service.edge, attempt: service.inlineAttempt)
        servedBuckets = ServedBuckets(service: service)
        observation = Observation(observability: observability, logger: service.logger, attempt: service.inlineAttempt)
        let parts = RouteGroupParts(service: service, registry: registry, sessionCommit: sessionCommit)
        self.groups = router.groups.map { $0.init(parts) }
    }

    /// The whole pipeline for a request from a connection.
    func begin(_ head: HTTPRequestHead) -> RequestDisposition {
        var exchange = Exchange(id: observability.requestIDs.resolve(head))
        if head.method == "OPTIONS" {
            exchange.route = .preflight
            let ownPolicy = (try? route(of: head))?.target.setsOwnCrossOriginPolicy == true
            var response = CrossOrigin.preflight(head, ownPolicy: ownPolicy)
            observation.observe(&response, head, exchange)
            return .respond(response)
        }
        // The id is bound while the handler runs, so that a 5xx it renders names this request.
        let disposition = RequestIdentity.$current.withValue(exchange.id) { dispatch(head, &exchange) }
        return finishing(disposition, head, exchange)
    }

    /// The pipeline after what a declined inline attempt established: the route, and the context when the attempt
    /// got as far as authenticating (``PendingRequest``). `exchange` is the attempt's: its start, route and caller.
    func resume(_ route: Route, _ head: HTTPRequestHead, _ context: RequestContext?, _ exchange: Exchange)
        -> RequestDisposition
    {
        var exchange = exchange
        if exchange.id == nil { exchange.id = observability.requestIDs.resolve(head) }
        let disposition = RequestIdentity.$current.withValue(exchange.id) {
            context.map { dispatch(route, $0) } ?? dispatch(route, head, &exchange)
        }
        return finishing(disposition, head, exchange)
    }

    /// `disposition`'s answer, now or after the body, through ``finish(_:_:_:)``. A body declared longer than its
    /// sink takes is refused here, before the transport reads a byte of it (``BoundedBodySink``).
    private func finishing(_ disposition: RequestDisposition, _ head: HTTPRequestHead, _ exchange: Exchange)
        -> RequestDisposition
    {
        switch disposition {
        case .respond(var response):
            finish(&response, head, exchange)
            return .respond(response)
        case .readBody(let sink):
            if var refusal = DeclaredLength.refusal(sink, head) {
                sink.abort()
                refusal.headers.set("Connection", "close")
                finish(&refusal, head, exchange)
                return .respond(refusal)
            }
            return .readBody(ObservedSink(sink, pipeline: self, head: head, exchange: exchange))
        }
    }

    /// What every answer passes through once: ``CrossOrigin``, then ``Observation``.
    func finish(_ response: inout HTTPResponse, _ head: HTTPRequestHead, _ exchange: Exchange) {
        CrossOrigin.decorate(&response, head, ownPolicy: exchange.ownsCrossOrigin)
        observation.observe(&response, head, exchange)
    }

    /// Where a request goes (``Router``). Also what the fault handler names operations by (`--test-faults`).
    func route(of head: HTTPRequestHead) throws(Router.Refusal) -> Route { try router.route(of: head) }

    /// Routing, authentication, the served-bucket check and access, then the handler; no CORS, no log line.
    /// `exchange` learns the route and the caller.
    func dispatch(_ head: HTTPRequestHead, _ exchange: inout Exchange) -> RequestDisposition {
        let route: Route
        do { route = try self.route(of: head) } catch {
            exchange.refused(router.refusedLabel(error, head.rawPath))
            return .respond(refusal(error.error, nil, head, refusedBy: error.group))
        }
        exchange.routed(route, head)
        return dispatch(route, head, &exchange)
    }

    /// Authentication, then the rest.
    func dispatch(_ route: Route, _ head: HTTPRequestHead, _ exchange: inout Exchange) -> RequestDisposition {
        switch admit(route, head, &exchange) {
        case .admitted(let context): dispatch(route, context)
        case .refused(let response): .respond(response)
        }
    }

    enum Admission {
        case admitted(RequestContext)
        case refused(HTTPResponse)
    }

    /// Authentication: the context the handler gets, or the answer to a request whose credential or head is refused.
    /// `exchange` learns the caller.
    func admit(_ route: Route, _ head: HTTPRequestHead, _ exchange: inout Exchange) -> Admission {
        do {
            return .admitted(try authentication.admit(route, head, &exchange))
        } catch {
            return .refused(refusal(error, route, head))
        }
    }

    /// A refused credential is a 401 in the shape of the API the request was for (`route`, nil when its target was
    /// refused, by the group `refusedBy`).
    private func refusal(_ error: any Error, _ route: Route?, _ head: HTTPRequestHead, refusedBy group: Int? = nil)
        -> HTTPResponse
    {
        var response = errorShape(route, refusedBy: group, rawPath: head.rawPath).answer(error)
        // A head that is ambiguous (framed two ways, two Hosts) leaves the stream untrustworthy: close it.
        if response.status == 400 { response.headers.set("Connection", "close") }
        return response
    }

    /// The served-bucket check and access, then the handler, for an authenticated request.
    func dispatch(_ route: Route, _ context: RequestContext) -> RequestDisposition {
        let head = context.head
        switch servedBuckets.refusal(route, method: head.method) {
        case .unimplemented(let missing)?:
            return .respond(errorShape(route, rawPath: head.rawPath).answer(missing))
        case .notServed(let error)?:
            return .respond(errorShape(route, rawPath: head.rawPath).notServed(error, route.target, context))
        case nil:
            break
        }
        do {
            return try handle(route, context)
        } catch {
            // A declined inline attempt's answer is dropped: no need to render it.
            if service.inlineAttempt?.refused == true { return .respond(HTTPResponse(status: 503)) }
            return .respond(errorShape(route, rawPath: head.rawPath).answer(error, for: route.target, context))
        }
    }

    /// The route's group answers, or the kit for its own routes; what neither answers is a 404. A handler's thrown
    /// error is answered in the shape of the route's API (errors of a body's completion come later, and the sink
    /// renders them).
    private func handle(_ route: Route, _ context: RequestContext) throws -> RequestDisposition {
        let head = context.head
        if let group = route.group {
            if let disposition = try groups[group].handle(route.target, context, self) { return disposition }
        } else {
            switch (route.target as? KitTarget)?.route {
            case .probe:
                return .respond(Reply.json(200, .object(["emulator": .string("storage"), "server": .string("silo")])))
            case .openAPIDocument where head.method == "GET" || head.method == "HEAD":
                return .respond(OpenAPIDocument.response())
            case .operations(let endpoint):
                return operations.handle(endpoint, context)
            default:
                break
            }
        }
        // In the shape of the group whose paths these are, else v0's, as the Firebase emulator answers a path that
        // names nothing.
        let missing = StorageError(.notFound, "Not Found. No route for \(head.method) \(head.rawPath.prefix(200))")
        let shape = route.group.flatMap { groups[$0].errorShape(for: route.target, rawPath: head.rawPath) }
        return .respond((shape ?? FirebaseErrorShape()).answer(missing))
    }

    /// One call of a batch, run to completion as a request of its own: routed, authenticated and handled as if it
    /// had come alone, its body fed to the handler's sink from memory. Its failures are logged like any other
    /// request's, and it is counted and logged as a request of its own (with `batch_id`, the batch's id, and its
    /// own `X-Request-Id` in its part); CORS applies to the batch, not to its calls.
    package func dispatchBatchCall(_ head: HTTPRequestHead, _ body: [UInt8]) -> HTTPResponse {
        var exchange = Exchange(id: observability.requestIDs.next())
        exchange.parent = RequestIdentity.current
        exchange.bytesIn = Int64(body.count)
        var response = RequestIdentity.$current.withValue(exchange.id) {
            switch dispatch(head, &exchange) {
            case .respond(let answer): answer
            case .readBody(let sink): Self.drive(sink, body)
            }
        }
        observation.observe(&response, head, exchange)
        return response
    }

    /// Feeds `body` to `sink` in transport-sized pieces, then finishes it. An early answer ends the call as it ends
    /// an exchange on a connection: the sink gets no more bytes and is aborted, as the transports do.
    private static func drive(_ sink: any RequestBodySink, _ body: [UInt8]) -> HTTPResponse {
        let piece = 64 << 10
        return body.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + piece, bytes.count)
                if let early = sink.receive(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) {
                    sink.abort()
                    return early
                }
                offset = end
            }
            return sink.finish()
        }
    }
}
