#if os(Linux)
import SiloCore
import SiloHTTP
import Synchronization

/// What every event loop of one server shares: immutable settings plus atomics, so any loop thread may use it.
final class ServerState: Sendable {
    let handler: any HTTPHandler
    let configuration: EpollHTTPServer.Configuration
    let logger: Logger
    let listenFD: Int32
    /// The local end of every accepted connection, when the listener is bound to one address; nil for a wildcard
    /// bind, where each connection's is asked for at its accept.
    let listenerLocal: LocalEndpoint?
    /// Runs the handler calls that may block, for every loop.
    let pool: WorkerPool
    /// Requests that reached the handler and whose response has not been sent in full (nor the connection
    /// closed); shutdown waits for it to reach 0.
    let inFlight = Atomic<Int>(0)
    /// Open connections across all loops, for the connection limit.
    let connections = Atomic<Int>(0)
    /// Bytes of buffers held by open connections, each loop adding what changed since its last sweep.
    let connectionBufferBytes = Atomic<Int>(0)
    /// Set when shutdown begins: no more accepts, idle connections close, responses carry `Connection: close`.
    let draining = Atomic<Bool>(false)
    /// Set when the drain is over: loops close everything and exit.
    let stopping = Atomic<Bool>(false)
    /// Open connections per client address, when there is a per-client limit.
    private let perClient = BlockingMutex([PeerAddress: Int]())

    /// Counts a new connection from `peer`; false (counting nothing) when the client is at its limit.
    func admit(_ peer: PeerAddress) -> Bool {
        let limit = configuration.perClientConnectionLimit
        guard limit > 0 else { return true }
        return perClient.withLock { counts in
            let open = counts[peer, default: 0]
            guard open < limit else { return false }
            counts[peer] = open + 1
            return true
        }
    }

    /// Forgets a connection ``admit(_:)`` counted.
    func release(_ peer: PeerAddress) {
        guard configuration.perClientConnectionLimit > 0 else { return }
        perClient.withLock { counts in
            let open = counts[peer, default: 1] - 1
            counts[peer] = open > 0 ? open : nil
        }
    }

    init(
        handler: any HTTPHandler, configuration: EpollHTTPServer.Configuration, logger: Logger, listenFD: Int32,
        listenerLocal: LocalEndpoint?, pool: WorkerPool
    ) {
        self.listenerLocal = listenerLocal
        self.handler = handler
        self.pool = pool
        self.configuration = configuration
        self.logger = logger
        self.listenFD = listenFD
    }
}
#endif
