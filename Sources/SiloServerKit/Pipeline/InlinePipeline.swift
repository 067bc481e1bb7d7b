import SiloCore
import SiloHTTP

/// What one socket thread answers without blocking (``SiloServerApp/makeInlineAnswerer()``): a GET or HEAD of an
/// object's bytes or metadata whose live version the metadata store holds in memory
/// (``MetadataStore/cachedObject(_:_:)``), whose bytes are in ``SmallBlobCache``, with a credential verifiable without
/// I/O.
///
/// The request runs through the same ``RequestPipeline`` as on a worker, over a service bound to this thread's
/// ``InlineAttempt`` (``ObjectService/inlineView(_:)``), which refuses every call that would block: the first refusal
/// marks the attempt, and the answer is dropped.
/// The worker then carries on from the route and the context the attempt established (``PendingRequest``), so
/// neither is made twice. Refusals come before any write — the service refuses the stores without calling them — so a
/// declined attempt leaves nothing changed: the first v0 read of an object without a download token, which writes
/// one, goes to the worker whole. (What may change is memory only: ``VersionResponseCache`` memoizes the headers it
/// derived, exact under their version.)
///
/// One per socket thread, and used by that thread alone, so the attempt needs no thread slot: it is reset before each
/// request and read after it.
final class InlinePipeline: InlineAnswerer {
    /// The pipeline over this thread's inline service.
    private let inline: RequestPipeline
    /// What that service and the steps that must not block report to.
    private let attempt: InlineAttempt
    /// The worker's pipeline, which carries on with what this one declines.
    private let worker: RequestPipeline

    init(inline: RequestPipeline, attempt: InlineAttempt, worker: RequestPipeline) {
        (self.inline, self.attempt, self.worker) = (inline, attempt, worker)
    }

    func beginInline(_ head: HTTPRequestHead) -> InlineDisposition {
        guard head.method == "GET" || head.method == "HEAD" else { return .declined }
        // A path that does not parse is answered on the worker, whole (rare; nothing to save).
        guard let route = try? worker.route(of: head) else { return .declined }
        // Only a read of one object can be answered inline: anything else goes on unauthenticated, so that no
        // credential is verified on the loop for an answer the loop cannot give.
        // No request id yet: a declined attempt needs none (the worker's ``RequestPipeline/resume`` makes it).
        var exchange = Exchange(id: nil)
        exchange.routed(route, head)
        guard route.target.readsOneObject else { return .deferred(PendingRequest(worker, route, head, nil, exchange)) }
        // Read before the attempt: a write or a reload that lands during it leaves the answer's permit out of date.
        let stamp: ReplayableAnswer.Stamp? =
            if head.wantsReplayPermit, let read = route.target.replayableRead {
                ReplayableAnswer.Stamp(worker.service, read.bucket, read.object)
            } else {
                nil
            }
        attempt.begin()
        let admission = inline.admit(route, head, &exchange)
        // A credential that needed the store (a signed URL's HMAC key) is verified again on the worker: a refused
        // read, even one a step took with `try?`, may have left a principal that is not the real one.
        guard !attempt.refused else {
            exchange.caller = .anonymous
            return .deferred(PendingRequest(worker, route, head, nil, exchange))
        }
        let context: RequestContext
        switch admission {
        case .admitted(let admitted):
            context = admitted
        case .refused(var response):
            inline.finish(&response, head, exchange)
            return .answered(.respond(response))
        }
        switch inline.dispatch(route, context) {
        case .respond(var response) where !attempt.refused:
            inline.finish(&response, head, exchange)
            response.replay = ReplayableAnswer.admit(
                response, head, exchange, stamp: stamp, reads: attempt.reads, service: worker.service,
                observability: worker.observability)
            return .answered(.respond(response))
        case .respond:
            break
        case .readBody(let sink):
            // No object read takes a body; should one ever, it is read on a worker.
            sink.abort()
        }
        return .deferred(PendingRequest(worker, route, head, context, exchange))
    }
}
