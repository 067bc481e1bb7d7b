import Foundation
public import SiloCore
import SiloCurl
import Synchronization

/// Delivers the storage events in a metadata store's outbox to webhooks, at least once, off the HTTP loops: a few
/// threads of its own claim due events (a lease, so each goes to one node when several share the store), POST each
/// to every webhook that wants it, and forget it when all answered 2xx, or schedule it again with backoff. The
/// event's id is its outbox sequence, so every attempt, before and after a restart, on any node, carries the same
/// id. An event that some webhooks accepted and one refused is sent again to all of them (same id). An event still
/// undelivered when its retention window runs out is given up on (deleted, logged with its identity, counted), so
/// the outbox holds at most that window's changes.
public final class EventDispatcher: Sendable {
    public struct Configuration: Sendable {
        public var targets: [WebhookTarget] = []
        /// The HMAC-SHA256 key the body signature (``CloudEventMessage/signatureHeader``) is made with.
        public var secret: [UInt8] = []
        /// scheme://host[:port] the data's links point at: where clients reach this server.
        public var base = "http://127.0.0.1:9199"
        /// Threads delivering at once (each one event at a time): the bound on concurrent webhook requests.
        public var concurrency = 4
        /// Limit on one webhook request, connecting included.
        public var timeout: Duration = .seconds(10)
        /// Events one thread claims at a time.
        public var batchSize = 4
        /// How often an idle thread looks for new events.
        public var pollInterval: Duration = .milliseconds(250)
        public var backoff = DeliveryBackoff()
        /// How long after its change an event is still tried: 7 days, the window in which Cloud Functions retries a
        /// background event. Older ones are abandoned.
        public var retention: Duration = .seconds(7 * 86_400)

        public init() {}

        /// How long a claim holds its events: the whole batch's requests, with a margin. After a crash, that is how
        /// long the claimed events wait before another claim (a restart, another node) sends them.
        public var lease: Duration {
            timeout * (batchSize * max(targets.count, 1)) + .seconds(5)
        }
    }

    private let store: any MetadataStore
    private let configuration: Configuration
    private let logger: Logger
    /// This process's name on the leases it takes.
    public let owner: String
    private let client = CurlClient(reuseConnections: true)
    private let stopping = Atomic(false)
    private let delivered = Atomic(0)
    private let failed = Atomic(0)
    private let abandoned = Atomic(0)
    private let wake = DispatchSemaphore(value: 0)
    private let running = DispatchGroup()
    /// The transfers in flight, so shutdown can abort them.
    private let inFlight = Mutex<[Int: CurlTransferControl]>([:])

    public init(store: any MetadataStore, configuration: Configuration, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        owner = "silo-" + (0..<16).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
    }

    /// Starts the delivery threads.
    public func start() {
        for index in 0..<max(configuration.concurrency, 1) {
            running.enter()
            let thread = Thread { [self] in
                defer { running.leave() }
                work(index)
            }
            thread.name = "silo.events.\(index)"
            thread.start()
        }
    }

    /// Stops claiming, aborts the requests in flight (their events stay leased until the lease ends, then go out
    /// again) and waits for the threads.
    public func shutdown() {
        stopping.store(true, ordering: .releasing)
        inFlight.withLock { $0.values.forEach { $0.abort() } }
        for _ in 0..<max(configuration.concurrency, 1) { wake.signal() }
        running.wait()
    }

    public func statistics() -> EventDeliveryStatistics {
        let status = (try? store.outboxStatus()) ?? OutboxStatus(pending: 0, oldest: nil)
        let lag = status.oldest.map { Double(max(Timestamp.now().microseconds - $0.microseconds, 0)) / 1e6 } ?? 0
        return EventDeliveryStatistics(
            delivered: delivered.load(ordering: .relaxed), failedAttempts: failed.load(ordering: .relaxed),
            pending: status.pending, lagSeconds: lag, abandoned: abandoned.load(ordering: .relaxed))
    }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    private func work(_ index: Int) {
        while !isStopping {
            let now = Timestamp.now()
            let claimed: [OutboxEvent]
            do {
                claimed = try store.claimEvents(
                    owner: owner, now: now, leaseUntil: now.adding(configuration.lease),
                    limit: configuration.batchSize)
            } catch {
                logger.error(
                    "event outbox claim failed", metadata: ["silo.error": detailedDescription(of: error)])
                claimed = []
            }
            for event in claimed where !isStopping { deliver(event, thread: index) }
            if claimed.count < configuration.batchSize && !isStopping {
                _ = wake.wait(timeout: .now() + .microseconds(Int(configuration.pollInterval.microseconds)))
            }
        }
    }

    private func deliver(_ outbox: OutboxEvent, thread: Int) {
        let age = Timestamp.now().microseconds - outbox.event.time.microseconds
        if age > configuration.retention.microseconds {
            abandon(outbox, ageSeconds: age / 1_000_000)
            return
        }
        let targets = configuration.targets.filter { $0.wants(outbox.event) }
        let message = CloudEventMessage(outbox, base: configuration.base, secret: configuration.secret)
        var failure: String?
        for target in targets where failure == nil {
            failure = post(message, to: target, thread: thread)
        }
        do {
            if let failure {
                failed.add(1, ordering: .relaxed)
                let attempts = outbox.attempts + 1
                let delay = configuration.backoff.delay(afterAttempts: attempts, unit: Double.random(in: 0..<1))
                try store.retryEvent(outbox.sequence, owner: owner, retryAt: Timestamp.now().adding(delay))
                logger.warning(
                    "event delivery failed; will retry",
                    metadata: [
                        "silo.event.id": "\(outbox.id)", "silo.event.attempts": "\(attempts)",
                        "silo.error": "\(failure)",
                    ])
            } else {
                try store.completeEvent(outbox.sequence)
                delivered.add(1, ordering: .relaxed)
            }
        } catch {
            // The lease runs out and the event goes again: at least once.
            logger.error(
                "event outbox update failed",
                metadata: ["silo.event.id": "\(outbox.id)", "silo.error": detailedDescription(of: error)])
        }
    }

    /// Forgets an event past the retention window. The log line names it fully, so an operator can replay it.
    private func abandon(_ outbox: OutboxEvent, ageSeconds: Int64) {
        do {
            try store.completeEvent(outbox.sequence)
            abandoned.add(1, ordering: .relaxed)
            logger.error(
                "event abandoned: undelivered when its retention window ran out",
                metadata: [
                    "silo.event.id": "\(outbox.id)", "silo.event.type": "\(outbox.event.kind)",
                    "silo.bucket": "\(outbox.event.object.bucket)", "silo.object": "\(outbox.event.object.name)",
                    "silo.generation": "\(outbox.event.object.generation)", "silo.event.attempts": "\(outbox.attempts)",
                    "silo.event.age_seconds": "\(ageSeconds)",
                ])
        } catch {
            // Kept: the lease runs out and the next claim abandons it again.
            logger.error(
                "event outbox update failed",
                metadata: ["silo.event.id": "\(outbox.id)", "silo.error": detailedDescription(of: error)])
        }
    }

    /// Nil when the webhook answered 2xx; else why not (for the log: the status, or the transport's error).
    private func post(_ message: CloudEventMessage, to target: WebhookTarget, thread: Int) -> String? {
        let control = CurlTransferControl()
        inFlight.withLock { $0[thread] = control }
        defer { _ = inFlight.withLock { $0.removeValue(forKey: thread) } }
        if isStopping { return "shutting down" }
        let request = CurlRequest(
            method: "POST", url: target.url, headers: message.headers.map { CurlHeader($0.name, $0.value) },
            body: .bytes(Data(message.body)),
            timeouts: CurlTimeouts(
                connect: configuration.timeout, idle: configuration.timeout, total: configuration.timeout),
            bufferSize: 16 * 1024)
        do {
            // The answer is read only for its status; a receiver's page of HTML is cut off, not stored.
            let response = try client.performBuffered(request, bodyLimit: 64 * 1024, control: control)
            return (200..<300).contains(response.status) ? nil : "HTTP \(response.status) from \(target.url)"
        } catch let limit as CurlBodyLimitExceeded {
            return (200..<300).contains(limit.status) ? nil : "HTTP \(limit.status) from \(target.url)"
        } catch {
            return "\(target.url): \(error)"
        }
    }
}

extension Timestamp {
    fileprivate func adding(_ duration: Duration) -> Timestamp {
        Timestamp(microseconds: microseconds + duration.microseconds)
    }
}

extension Duration {
    fileprivate var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }
}
