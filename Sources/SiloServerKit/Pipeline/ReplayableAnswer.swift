import SiloCore
import SiloHTTP

/// Leave for the transport to send an inline answer again to the same request head (``ReplayPermit``), while the
/// object versions and the rules it was derived from stand.
///
/// Given only to an answer that follows from the head and from those alone
/// (``admit(_:_:_:stamp:reads:service:observability:)``): a v0 read of one object that read nothing but the cached
/// live version, the blob's bytes (never changed under a blob id), headers derived from the version and the rules'
/// decision by path (or the object's download token); each step records anything else it reads
/// (``InlineAttempt/Reads``). Those change only with a write of that object's metadata or of its bucket
/// (``MetadataStore/cacheStamp(_:_:)``) or a rules reload (``AccessPolicy/version``): both are read before the
/// attempt starts, so a change that lands during it already makes the permit out of date.
///
/// A replay is counted and logged as the request it answers, under a new request id.
final class ReplayableAnswer: ReplayPermit {
    /// The stamps an answer's sources had before it was made: the object's in the metadata store, and the rules'.
    struct Stamp {
        var metadata: CacheStamp
        var policy: UInt64

        /// Nil when either source keeps none: nothing is replayed then.
        init?(_ service: ObjectService, _ bucket: BucketName, _ name: ObjectName) {
            guard let metadata = service.cacheStamp(bucket, name), let policy = service.policy.version
            else { return nil }
            (self.metadata, self.policy) = (metadata, policy)
        }

        func isCurrent(_ service: ObjectService) -> Bool {
            service.isCurrent(metadata) && service.policy.version == policy
        }
    }

    // What a replay needs, and no more: a permit is made for every answer it could be given to, so that the
    // transport can keep the ones it sees again (holding the whole pipeline cost ~4,000 instructions per answer).
    private let service: ObjectService
    private let observability: Observability
    private let stamp: Stamp
    private let method: String
    private let exchange: Exchange
    private let status: Int
    private let bytesOut: Int64?

    private init(
        _ service: ObjectService, _ observability: Observability, stamp: Stamp, method: String, exchange: Exchange,
        response: HTTPResponse
    ) {
        (self.service, self.observability) = (service, observability)
        self.stamp = stamp
        self.method = method
        self.exchange = exchange
        self.status = response.status
        self.bytesOut = response.body.length
    }

    /// The permit for `response`, the answer an inline attempt kept (it refused nothing) to `head`, or nil when it
    /// may not be replayed: a pure function of what the answer depended on. `stamp` was read before the attempt
    /// started; `reads` is what the attempt recorded. What any transport must not replay (a staged fault, a body it
    /// cannot keep) is the transport's to refuse.
    static func admit(
        _ response: HTTPResponse, _ head: HTTPRequestHead, _ exchange: Exchange, stamp: Stamp?,
        reads: InlineAttempt.Reads, service: ObjectService, observability: Observability
    ) -> ReplayableAnswer? {
        // Only when the transport would keep it: a permit costs an allocation per answer. A stamp is read only for
        // a route whose answer is made of the version, the blob and the access decision (``RouteTarget/replayableRead``).
        guard head.wantsReplayPermit, let stamp, reads.isEmpty else { return nil }
        // A server failure is answered again, not kept.
        guard response.failure == nil, response.status < 500 else { return nil }
        return ReplayableAnswer(
            service, observability, stamp: stamp, method: head.method, exchange: exchange, response: response)
    }

    package var isCurrent: Bool { stamp.isCurrent(service) }

    package func replayed() -> String {
        let started = RequestMetrics.now()
        observability.replays.add(0)
        let id = observability.requestIDs.next()
        observability.record(method, exchange, since: started, id: id, status: status, bytesOut: bytesOut)
        return id
    }
}
