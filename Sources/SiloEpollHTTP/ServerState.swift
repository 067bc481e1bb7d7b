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
    /// Requests that reached the handler and whose response has not been sent in full (nor the connection
    /// closed); shutdown waits for it to reach 0.
    let inFlight = Atomic<Int>(0)
    /// Open connections across all loops, for the connection limit.
    let connections = Atomic<Int>(0)
    /// Set when shutdown begins: no more accepts, idle connections close, responses carry `Connection: close`.
    let draining = Atomic<Bool>(false)
    /// Set when the drain is over: loops close everything and exit.
    let stopping = Atomic<Bool>(false)

    init(handler: any HTTPHandler, configuration: EpollHTTPServer.Configuration, logger: Logger, listenFD: Int32) {
        self.handler = handler
        self.configuration = configuration
        self.logger = logger
        self.listenFD = listenFD
    }
}
#endif
