import SiloCore
import SiloHTTP

/// Leave for the transport to send an inline answer again to the same request head (``ReplayPermit``), while the
/// object versions and the rules it was derived from stand.
///
/// Given only to an answer that follows from the head and from those alone (``admit(_:_:_:_:stamp:attempt:)``):
/// a v0 read of one object, by a caller without credentials, whose access decision depended on the path alone or
/// on the object's download token. What such an answer reads — the cached live version, the blob's bytes (never
/// changed under a blob id), headers derived from the version, the rules' path decision — changes only with a
/// metadata write (``MetadataStore/cacheStamp``) or a rules reload (``AccessPolicy/version``): both are read
/// before the attempt starts, so a change that lands during it already makes the permit out of date.
///
/// A replay is counted and logged as the request it answers, under a new request id.
final class ReplayableAnswer: ReplayPermit {
    /// The stamps an answer's sources had before it was made.
    struct Stamp: Equatable {
        var metadata: UInt64
        var policy: UInt64

        /// Nil when either source keeps none: nothing is replayed then.
        init?(_ service: ObjectService) {
            guard let metadata = service.metadata.cacheStamp, let policy = service.policy.version else { return nil }
            (self.metadata, self.policy) = (metadata, policy)
        }
    }

    private let service: ObjectService
    private let pipeline: RequestPipeline
    private let stamp: Stamp
    private let method: String
    private let exchange: Exchange.Fields
    private let status: Int
    private let bytesOut: Int64?

    private init(
        _ pipeline: RequestPipeline, stamp: Stamp, method: String, exchange: Exchange.Fields, response: HTTPResponse
    ) {
        self.service = pipeline.service
        self.pipeline = pipeline
        self.stamp = stamp
        self.method = method
        self.exchange = exchange
        self.status = response.status
        self.bytesOut = response.body.length
    }

    /// The permit for `response`, answered inline to `head` by `attempt`, or nil when it may not be replayed.
    /// `stamp` was read before the attempt started.
    static func admit(
        _ response: HTTPResponse, _ head: HTTPRequestHead, _ context: RequestContext, _ exchange: Exchange,
        stamp: Stamp?, attempt: InlineAttempt, pipeline: RequestPipeline
    ) -> ReplayableAnswer? {
        guard let stamp, attempt.lasting, !attempt.refused else { return nil }
        // A v0 object read: its answer reads nothing but the version, the blob and the rules' path decision.
        guard case .firebaseObject = exchange.route else { return nil }
        // No credential (its verdict depends on the time), and no id of the client's own to echo.
        guard context.principal == nil, head.headers["X-Request-Id"] == nil else { return nil }
        guard response.failure == nil, response.transportFault == nil, response.status < 500 else { return nil }
        switch response.body {
        case .empty, .bytes: break
        case .file, .stream: return nil
        }
        return ReplayableAnswer(
            pipeline, stamp: stamp, method: head.method, exchange: exchange.fields, response: response)
    }

    var isCurrent: Bool { Stamp(service) == stamp }

    func replayed() -> String {
        let started = RequestMetrics.now()
        pipeline.observability.replays.add(0)
        let id = pipeline.observability.requestIDs.next()
        pipeline.record(method, exchange, since: started, id: id, status: status, bytesOut: bytesOut)
        return id
    }
}
