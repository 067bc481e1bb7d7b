import SiloHTTP

/// What a declined inline attempt (``InlinePipeline``) hands the worker: the route it parsed and,
/// when it got that far, the context with the verified principal, so that the worker carries on from there instead
/// of routing and verifying the credential again. Only what the attempt established without a store is here:
/// an attempt refused while authenticating (a signed URL's key is in the store) hands over the route alone.
///
/// Created on the socket's thread and run once on a worker; the transport hands it over as any call (one owner at
/// a time, each hand-off under a lock), so it needs to be neither Sendable nor released when never run.
final class PendingRequest: DeferredBegin {
    private let pipeline: RequestPipeline
    private let route: Route
    private let head: HTTPRequestHead
    private let context: RequestContext?
    /// The attempt's start, route and caller, so the request is timed and logged from its arrival.
    private let exchange: Exchange

    init(
        _ pipeline: RequestPipeline, _ route: Route, _ head: HTTPRequestHead, _ context: RequestContext?,
        _ exchange: Exchange
    ) {
        self.pipeline = pipeline
        self.route = route
        self.head = head
        self.context = context
        self.exchange = exchange
    }

    package func begin() -> RequestDisposition { pipeline.resume(route, head, context, exchange) }
}
