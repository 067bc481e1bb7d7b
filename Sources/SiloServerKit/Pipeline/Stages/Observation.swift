import SiloCore
import SiloHTTP

/// The pipeline's last stage, once per answer, for every API, on whichever thread answers (the loop's for inline
/// answers, so only atomic adds and, with an access log, one short append): the log line and the count of a server
/// failure, the request's metrics, its `X-Request-Id` and its access-log line.
struct Observation: Sendable {
    let observability: Observability
    let logger: Logger
    /// Set on an event loop's pipeline: an answer that echoes the client's `X-Request-Id` may not be replayed.
    let attempt: InlineAttempt?

    /// Everything above for `response`. A failure rendered outside the handler names its own request id, which
    /// then replaces the exchange's.
    func observe(_ response: inout HTTPResponse, _ head: HTTPRequestHead, _ exchange: Exchange) {
        let id: String
        if let known = failed(response, head) ?? exchange.id {
            id = known
        } else if let sent = observability.requestIDs.clientID(head) {
            // The answer echoes what the client sent: an inline attempt records that it read it.
            attempt?.read(.clientRequestID)
            id = sent
        } else {
            id = observability.requestIDs.next()
        }
        // A 5xx carries its id in its headers already (``Reply/failing(_:status:headers:render:)``, the only answers
        // with a failure); no other answer's fields need searching.
        if response.failure == nil || response.headers["X-Request-Id"] == nil { response.requestID = id }
        record(head, exchange, id: id, status: response.status, bytesOut: response.body.length)
    }

    /// A request whose client went away before its body was read: counted and logged as 499, as proxies name it.
    func observeAbort(_ head: HTTPRequestHead, _ exchange: Exchange) {
        record(head, exchange, id: exchange.id ?? observability.requestIDs.next(), status: 499, bytesOut: 0)
    }

    private func record(_ head: HTTPRequestHead, _ exchange: Exchange, id: String, status: Int, bytesOut: Int64?) {
        observability.record(
            head.method, exchange, since: exchange.started, id: id, status: status, bytesOut: bytesOut)
    }

    /// A 5xx's log line and its count by kind; the id the answer's message names (the exchange's own unless the
    /// failure was rendered outside a handler), nil for an answer that is no failure.
    private func failed(_ response: HTTPResponse, _ head: HTTPRequestHead) -> String? {
        guard let failure = response.failure as? ServerFailure else { return nil }
        logger.error(
            "request failed",
            metadata: [
                "silo.request_id": failure.requestID, "silo.http.status": "\(response.status)",
                "silo.http.method": head.method, "silo.http.path": String(head.rawPath.prefix(300)),
                // One line: the cause chain joined, so a log reader sees one entry per failure.
                "silo.error": failure.error.detailedDescription().split(separator: "\n").joined(separator: " |"),
            ])
        observability.failures.count(failure.error.code)
        return failure.requestID
    }
}
