public import SiloCore
import Synchronization

/// What the server reports about itself: request metrics, the access log, and the metric sources the executable
/// plugs in (the rules engine's counts, the event outbox, per-bucket usage kept by the store), each asked once per
/// `/metrics` scrape. One per server; the pipeline records every request into it once.
public final class Observability: Sendable {
    /// Where access-log lines go; nil writes none.
    public let accessLog: AccessLog?
    let requests = RequestMetrics()
    let requestIDs = RequestIDs()
    let failures = FailureCounts()
    /// Answers a transport sent again without the handler (``ReplayableAnswer``): `silo_replayed_answers_total`.
    let replays = AtomicCounters(count: 1)
    /// Seconds since the epoch when the server started (`silo_process_start_time_seconds`).
    let started = Timestamp.now()
    private let sources = Mutex<[any MetricsSource]>([])

    public init(accessLog: AccessLog? = nil) {
        self.accessLog = accessLog
    }

    /// Adds a source whose families `/metrics` reports from now on. A source owns its metric names: no two sources,
    /// and no source and the server, may write the same family.
    public func register(_ source: any MetricsSource) {
        sources.withLock { $0.append(source) }
    }

    var registered: [any MetricsSource] { sources.withLock { $0 } }

    /// A request's metrics and access-log line, for an answer that took since `started` (``RequestMetrics/now()``).
    func record(
        _ method: String, _ exchange: Exchange, since started: UInt64, id: String, status: Int, bytesOut: Int64?
    ) {
        let micros = RequestMetrics.now() &- started
        // A batch's calls are counted as requests, but their bytes are the batch's, counted once.
        let own = exchange.parent == nil
        requests.record(
            exchange.route, status: status, micros: micros,
            bytesIn: own ? exchange.bytesIn : nil, bytesOut: own ? bytesOut : nil)
        guard let accessLog else { return }
        accessLog.record(
            AccessRecord(
                time: .now(), id: id, parent: exchange.parent, route: exchange.route,
                method: method, bucket: exchange.bucket, object: exchange.object, status: status,
                bytesIn: exchange.bytesIn, bytesOut: bytesOut, micros: micros, caller: exchange.caller))
    }
}

/// Server-side failures (5xx answers) by the code of the error behind them. Failures are rare, so a lock is fine;
/// the codes are the server's own (``StorageError/Code``), so the label set is bounded.
final class FailureCounts: Sendable {
    private let counts = Mutex<[String: UInt64]>([:])

    func count(_ code: StorageError.Code) {
        counts.withLock { $0[code.description, default: 0] += 1 }
    }

    var snapshot: [(kind: String, count: UInt64)] {
        counts.withLock { $0.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }
}
