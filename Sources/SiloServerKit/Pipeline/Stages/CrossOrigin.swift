import SiloHTTP

/// The pipeline's stage that every answer passes through: the sandbox that keeps whatever it carries out of the
/// console's origin (``ContentIsolation``) and CORS, for every route but those that set their own policy
/// (``RouteTarget/setsOwnCrossOriginPolicy``: the console answers no other origin); and the answer to a preflight.
enum CrossOrigin {
    /// `response` as it leaves for `head`'s client.
    static func decorate(_ response: inout HTTPResponse, _ head: HTTPRequestHead, ownPolicy: Bool) {
        guard !ownPolicy else { return }
        ContentIsolation.ensure(&response.headers)
        if head.headers["Origin"] != nil { CORS.decorate(&response, request: head) }
    }

    /// The answer to an `OPTIONS` preflight, which no route sees: refused for a route with its own policy.
    static func preflight(_ head: HTTPRequestHead, ownPolicy: Bool) -> HTTPResponse {
        var response = ownPolicy ? CORS.refusedPreflight() : CORS.preflight(head)
        ContentIsolation.ensure(&response.headers)
        return response
    }
}
