internal import CMicroHTTPD
public import SiloCore
public import SiloHTTP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An ``HTTPServer`` on libmicrohttpd: an internal epoll thread pool on which the handler runs (and may block).
///
/// The daemon is bound and running when `init` returns. Call ``shutdown(drainTimeout:)`` to stop it gracefully;
/// deinit stops it at once if that was not done.
public final class MicroHTTPDServer: HTTPServer, Sendable {
    /// The bound port (the real one after binding port 0).
    public let port: Int
    public let configuration: Configuration
    private let context: DaemonContext
    private let logger: Logger
    /// The daemon handle while it runs; taken out (nil) by the first shutdown. OpaquePointer is not Sendable,
    /// the Mutex makes the handover between threads safe.
    private let daemon: Mutex<DaemonHandle?>

    public init(handler: any HTTPHandler, configuration: Configuration, logger: Logger) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        let context = DaemonContext(
            handler: handler, logger: logger, streamBlockSize: configuration.streamBlockSize,
            maxDiscardedBodyBytes: configuration.maxDiscardedBodyBytes)
        self.context = context
        let host = ServerLifecycle.normalizedHost(configuration.host)
        let address = "\(host.contains(":") ? "[\(host)]" : host):\(configuration.port)"

        // Ownership: the daemon context is retained for MHD here and released after MHD_stop_daemon (stop()),
        // when no callback can run any more.
        let contextPointer = Unmanaged.passRetained(context).toOpaque()
        var failure: Int32 = 0
        var error: Int32 = 0
        let started: OpaquePointer? = host.withCString { hostPointer in
            var options = silo_mhd_start_options(
                host: hostPointer, port: UInt16(configuration.port),
                extra_flags: configuration.libraryErrorLog ? MHD_USE_ERROR_LOG.rawValue : 0,
                access_handler: requestAccess, access_handler_cls: contextPointer,
                completed: requestCompleted, completed_cls: contextPointer,
                uri_log: requestURILogged, uri_log_cls: contextPointer,
                thread_pool_size: UInt32(configuration.threadPoolSize),
                connection_memory_limit: configuration.connectionMemoryLimit,
                connection_limit: UInt32(configuration.connectionLimit),
                connection_timeout_seconds: UInt32(configuration.connectionTimeoutSeconds),
                listen_backlog: UInt32(configuration.listenBacklog),
                per_ip_connection_limit: UInt32(configuration.perClientConnectionLimit))
            return silo_mhd_start(&options, &failure, &error)
        }
        guard let started else {
            Unmanaged<DaemonContext>.fromOpaque(contextPointer).release()
            throw HTTPServerError.startFailure(failure, errno: error, address: address)
        }
        let bound = Int(silo_mhd_bound_port(started))
        self.port = bound != 0 ? bound : configuration.port
        self.daemon = Mutex(DaemonHandle(started))
        logger.info(
            "http server listening", metadata: ["silo.http.address": "\(address)", "silo.http.port": "\(port)"])
    }

    /// Stops accepting connections at once, waits up to `drainTimeout` seconds for requests in flight to complete,
    /// then closes every connection and stops the threads. Later calls return immediately.
    public func shutdown(drainTimeout: Double) {
        logger.debug("http server shutdown requested")
        guard let handle = daemon.withLock({ $0.take() }) else { return }
        context.draining.store(true, ordering: .relaxed)
        // Quiescing removes the listen socket from MHD's polling; shutting it down makes the kernel refuse new
        // connections now instead of queueing them unanswered until the drain ends. MHD no longer closes a
        // quiesced socket, so we close it after the threads are gone.
        let listenSocket = MHD_quiesce_daemon(handle.pointer)
        if listenSocket >= 0 { _ = Glibc.shutdown(listenSocket, Int32(SHUT_RDWR)) }
        logger.debug("http server draining", metadata: ["silo.http.listenSocket": "\(listenSocket)"])

        let unfinished = ServerLifecycle.drain(timeout: drainTimeout) { context.inFlight.load(ordering: .acquiring) }
        if unfinished > 0 {
            logger.notice("http server drain timed out", metadata: ["silo.http.inFlight": "\(unfinished)"])
        }
        stop(handle)
        if listenSocket >= 0 { _ = close(listenSocket) }
        logger.info("http server stopped", metadata: ["silo.http.port": "\(port)"])
    }

    /// Requests that reached the handler and have not completed yet.
    public var requestsInFlight: Int { context.inFlight.load(ordering: .relaxed) }

    deinit {
        if let handle = daemon.withLock({ $0.take() }) { stop(handle) }
    }

    private func stop(_ handle: DaemonHandle) {
        MHD_stop_daemon(handle.pointer)
        // Ownership: balances the passRetained in init; every MHD thread has exited, so no callback holds it.
        Unmanaged.passUnretained(context).release()
    }
}

/// The daemon pointer, movable between threads only through the server's Mutex.
private struct DaemonHandle: @unchecked Sendable {
    // @unchecked: a raw C handle; the Mutex hands it to exactly one thread (the one that stops the daemon).
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

extension MicroHTTPDServer.Configuration {
    func validate() throws {
        func invalid(_ text: String) -> HTTPServerError { HTTPServerError(.invalidConfiguration, text) }
        guard (0...65535).contains(port) else { throw invalid("port \(port) is outside 0...65535") }
        guard threadPoolSize >= 1 && threadPoolSize <= 1024 else {
            throw invalid("threadPoolSize \(threadPoolSize) is outside 1...1024")
        }
        guard connectionMemoryLimit >= 4096 else { throw invalid("connectionMemoryLimit must be at least 4096") }
        guard connectionLimit >= 1, connectionLimit <= Int(UInt32.max) else {
            throw invalid("connectionLimit must be positive")
        }
        guard connectionTimeoutSeconds >= 0, connectionTimeoutSeconds <= Int(UInt32.max) else {
            throw invalid("connectionTimeoutSeconds must not be negative")
        }
        guard listenBacklog >= 1, listenBacklog <= Int(UInt32.max) else {
            throw invalid("listenBacklog must be positive")
        }
        guard streamBlockSize >= 1024 else { throw invalid("streamBlockSize must be at least 1024") }
        guard maxDiscardedBodyBytes >= 0 else { throw invalid("maxDiscardedBodyBytes must not be negative") }
    }
}

extension HTTPServerError {
    static func startFailure(_ failure: Int32, errno: Int32, address: String) -> HTTPServerError {
        switch failure {
        case Int32(SILO_MHD_START_BAD_ADDRESS):
            return HTTPServerError(
                .invalidConfiguration, "cannot bind \(address): host is not a numeric IPv4 or IPv6 address")
        case Int32(SILO_MHD_START_BIND):
            let cause = SystemCallError(call: "bind", errno: errno)
            let reason = String(cString: strerror(errno)).lowercased()
            return HTTPServerError(
                errno == EADDRINUSE ? .addressInUse : .bindFailed, "cannot bind \(address): \(reason)", cause: cause)
        default:
            return HTTPServerError(
                .startFailed,
                "cannot start the HTTP server on \(address): libmicrohttpd refused (set libraryErrorLog for details)")
        }
    }
}
