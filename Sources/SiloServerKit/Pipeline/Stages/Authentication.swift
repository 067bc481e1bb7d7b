import SiloCore
import SiloHTTP

/// The pipeline's authentication stage: a request's credentials into the ``RequestContext`` its handler gets
/// (principal, query, peer), or the error that refuses it. A signed URL authenticates only a route that takes one
/// (``RouteTarget/acceptsSignedURLs``).
struct Authentication: Sendable {
    let credentials: any CredentialVerifier
    let edge: EdgePolicy
    /// Set on an event loop's pipeline: a verified credential holds only until it expires, so an answer that read
    /// one may not be replayed (``InlineAttempt/Reads``).
    let attempt: InlineAttempt?

    /// The context for `head` on `route`; `exchange` learns the caller.
    func admit(_ route: Route, _ head: HTTPRequestHead, _ exchange: inout Exchange) throws -> RequestContext {
        let context = try RequestContext(
            head: head, credentials: credentials, edge: edge, signedURLs: route.target.acceptsSignedURLs)
        exchange.caller = Exchange.Caller(context.principal)
        if context.principal != nil { attempt?.read(.credential) }
        return context
    }
}
