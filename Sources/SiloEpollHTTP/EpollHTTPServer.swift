#if os(Linux)
internal import CLinux
import Glibc
public import SiloCore
public import SiloHTTP
import Synchronization

/// An ``HTTPServer`` written for Silo on epoll: N event-loop threads, each with its own epoll instance, sharing
/// one non-blocking listener registered with EPOLLEXCLUSIVE, and a bounded pool of worker threads for the handler
/// calls that may block. See docs/transport.md.
///
/// The server is bound and running when `init` returns. Call ``shutdown(drainTimeout:)`` to stop it gracefully;
/// deinit stops it at once if that was not done.
public final class EpollHTTPServer: HTTPServer, Sendable {
    /// The bound port (the real one after binding port 0).
    public let port: Int
    public let configuration: Configuration
    private let state: ServerState
    private let logger: Logger
    /// The loop threads while they run; taken out (empty) by the first shutdown.
    private let loops: Mutex<[LoopThread]>

    /// The CPUs this process may run on (its affinity mask, so `taskset` and cpusets count), at most 64.
    public static var availableCPUs: Int { min(Int(silo_available_cpus()), 64) }

    public init(handler: any HTTPHandler, configuration: Configuration, logger: Logger) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        // sendfile() to a socket the client closed raises SIGPIPE (it has no MSG_NOSIGNAL); a server must not die
        // of a client going away. `silo serve` ignores it too; this covers servers started by tests and tools.
        signal(SIGPIPE, SIG_IGN)
        let host = ServerLifecycle.normalizedHost(configuration.host)
        let listener = try Listener.open(host: host, port: configuration.port, backlog: configuration.listenBacklog)
        self.port = listener.port
        let pool: WorkerPool
        do {
            pool = try WorkerPool(
                workers: configuration.workerCount, queueLimit: configuration.workerQueueLimit, logger: logger)
        } catch {
            _ = close(listener.fd)
            throw error
        }
        let state = ServerState(
            handler: handler, configuration: configuration, logger: logger, listenFD: listener.fd,
            listenerLocal: listener.local, pool: pool)
        self.state = state
        var started: [LoopThread] = []
        do {
            for _ in 0..<configuration.threadCount { started.append(try LoopThread.start(state: state)) }
        } catch {
            Self.stop(started, state: state)
            throw error
        }
        self.loops = Mutex(started)
        let shown = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        logger.info(
            "http server listening",
            metadata: ["silo.http.address": "\(shown)", "silo.http.port": "\(port)", "silo.http.engine": "epoll"])
    }

    /// Stops accepting connections at once, waits up to `drainTimeout` seconds for requests in flight to complete,
    /// then closes every connection and stops the threads. Later calls return immediately.
    public func shutdown(drainTimeout: Double) {
        let running = loops.withLock { loops in
            let taken = loops
            loops = []
            return taken
        }
        guard !running.isEmpty else { return }
        state.draining.store(true, ordering: .releasing)
        // The kernel refuses new connections from now on instead of queueing them unanswered during the drain.
        // The descriptor itself is closed after the threads are gone (they may still name it in epoll_ctl).
        _ = Glibc.shutdown(state.listenFD, Int32(SHUT_RDWR))
        for loop in running { loop.wake() }
        let unfinished = ServerLifecycle.drain(timeout: drainTimeout) { state.inFlight.load(ordering: .acquiring) }
        if unfinished > 0 {
            logger.notice("http server drain timed out", metadata: ["silo.http.inFlight": "\(unfinished)"])
        }
        Self.stop(running, state: state)
        logger.info("http server stopped", metadata: ["silo.http.port": "\(port)"])
    }

    /// Requests that reached the handler and have not completed yet.
    public var requestsInFlight: Int { state.inFlight.load(ordering: .relaxed) }

    /// Bytes of buffers the open connections hold (heads, queued output, body and stream blocks), as the loops
    /// counted them at their last once-a-second sweep.
    public var connectionBufferBytes: Int { state.connectionBufferBytes.load(ordering: .relaxed) }

    deinit {
        let running = loops.withLock { loops in
            let taken = loops
            loops = []
            return taken
        }
        if !running.isEmpty {
            state.draining.store(true, ordering: .releasing)
            Self.stop(running, state: state)
        }
    }

    /// Ends the loops, joins their threads, then closes their descriptors and the listener (each exactly once:
    /// the caller took `running` out of the Mutex), and last stops the workers, which finish what is queued (the
    /// results of calls the loops no longer wait for are released on the workers).
    private static func stop(_ running: [LoopThread], state: ServerState) {
        state.stopping.store(true, ordering: .releasing)
        for loop in running { loop.wake() }
        for loop in running { loop.join() }
        _ = close(state.listenFD)
        state.pool.stop()
    }
}

/// One started event-loop thread: its mailbox (whose eventfd other threads write to wake it), and its thread to
/// join.
private final class LoopThread: Sendable {
    let epollFD: Int32
    let mailbox: LoopMailbox
    let thread: pthread_t

    private init(epollFD: Int32, mailbox: LoopMailbox, thread: pthread_t) {
        self.epollFD = epollFD
        self.mailbox = mailbox
        self.thread = thread
    }

    static func start(state: ServerState) throws -> LoopThread {
        let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else {
            throw HTTPServerError(
                .startFailed, "cannot create an epoll instance", cause: SystemCallError.now("epoll_create1"))
        }
        let wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            let error = SystemCallError.now("eventfd")
            _ = close(epollFD)
            throw HTTPServerError(.startFailed, "cannot create an eventfd", cause: error)
        }
        // From here on the loop's mailbox owns `wakeFD` and closes it when it goes.
        let loop = EventLoop(state: state, epollFD: epollFD, wakeFD: wakeFD)
        // Edge-triggered: every write to an eventfd is a new edge, so the loop never reads it back (one syscall
        // less per wake-up; workers wake it once per batch of finished calls). The counter cannot fill up: it
        // holds 2^64 - 2.
        let wakeEvents = EPOLLIN.rawValue | EPOLLET.rawValue
        guard silo_epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, wakeEvents, EventLoop.wakeToken) == 0,
            loop.startListening()
        else {
            let error = SystemCallError.now("epoll_ctl")
            _ = close(epollFD)
            throw HTTPServerError(.startFailed, "cannot register with epoll", cause: error)
        }
        // Ownership: the thread takes this reference (takeRetainedValue in loopThreadMain) and drops it when run()
        // returns; if the thread cannot start, it is released here.
        let argument = Unmanaged.passRetained(loop).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, loopThreadMain, argument)
        guard created == 0 else {
            Unmanaged<EventLoop>.fromOpaque(argument).release()
            _ = close(epollFD)
            throw HTTPServerError(
                .startFailed, "cannot start an event-loop thread",
                cause: SystemCallError(call: "pthread_create", errno: created))
        }
        return LoopThread(epollFD: epollFD, mailbox: loop.mailbox, thread: thread)
    }

    func wake() { mailbox.wake() }

    /// Waits for the thread, then closes its epoll instance (it no longer uses it; the eventfd closes with the
    /// mailbox).
    func join() {
        _ = pthread_join(thread, nil)
        _ = close(epollFD)
    }
}

/// The thread body; a free function so it is a plain C function pointer with no actor isolation.
private func loopThreadMain(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let argument else { return nil }
    let loop = Unmanaged<EventLoop>.fromOpaque(argument).takeRetainedValue()
    // Named for top -H, perf and /proc: a thread otherwise inherits its creator's name (often a dispatch queue's).
    silo_name_this_thread("silo-loop")
    loop.run()
    return nil
}
#endif
