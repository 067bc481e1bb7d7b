#if os(Linux)
internal import CLinux
import Glibc
import SiloCore
import SiloHTTP
import SiloTLS
import Synchronization

/// One event-loop thread: its epoll instance, its connections and the buffers they share. Only its own
/// ``InlineAnswerer`` runs on this thread; handler calls that may block go to the server's ``WorkerPool`` and come back through `mailbox`.
/// Everything here is confined to that thread (not Sendable); other threads only post to `mailbox` and write to
/// `wakeFD`.
final class EventLoop {
    /// epoll tokens below this are not connections (connection tokens are object addresses).
    static let listenerToken: UInt64 = 0
    static let wakeToken: UInt64 = 1

    let state: ServerState
    let epollFD: Int32
    let wakeFD: Int32
    /// Where workers hand back this loop's finished calls.
    let mailbox: LoopMailbox
    /// Calls that did not fit in the pool's queue, oldest first; their connections read nothing until they run.
    private var waitingForRoom: [HandlerCall] = []
    /// Monotonic seconds, refreshed after each epoll_wait and after each handler call (for idle timeouts).
    private(set) var now: Double = 0
    /// `Date: ...\r\n`, rebuilt when the second changes.
    private(set) var dateLine: [UInt8] = []
    private var dateSecond = -1
    /// Request bodies are read into this buffer and handed to sinks from it.
    let bodyBuffer: UnsafeMutableRawBufferPointer
    /// Answers this loop's connections may send again to the same request head.
    let replays = ReplayMemo()
    /// What answers cheap requests on this thread (nil: every request goes to a worker). Made with the loop and
    /// handed to its thread with it; only that thread calls it.
    let inline: (any InlineAnswerer)?
    /// Owns every open connection; epoll tokens point at these objects without retaining them.
    private var connections: [ObjectIdentifier: Connection] = [:]
    private var listening = false
    private var lastSweep: Double = 0
    /// What this loop's connections held at the last sweep (its share of ``ServerState/connectionBufferBytes``).
    private var sweptBufferBytes = 0
    /// Connections waiting out a staged stall (``TransportFault``) and when each resumes; empty unless the handler
    /// stages faults, so an ordinary loop only checks `isEmpty`.
    private var timers: [(deadline: Double, connection: ObjectIdentifier)] = []
    /// TLS connections whose received bytes wait inside OpenSSL, where no epoll event will announce them: read
    /// after the batch as if readable (and epoll_wait does not sleep while there are any).
    private var bufferedInput: [ObjectIdentifier] = []

    init(state: ServerState, epollFD: Int32, wakeFD: Int32) {
        self.state = state
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        self.mailbox = LoopMailbox(wakeFD: wakeFD)
        inline = state.handler.makeInlineAnswerer()
        bodyBuffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: state.configuration.readBufferSize, alignment: 16)
        refreshClock()
        lastSweep = now
    }

    deinit { bodyBuffer.deallocate() }

    func refreshClock() {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        now = Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        let wall = Glibc.time(nil)
        if wall != dateSecond {
            dateSecond = wall
            dateLine = HTTPDate.headerLine(wall)
        }
    }

    /// Registers the listener; the caller has registered `wakeFD`.
    func startListening() -> Bool {
        listening =
            silo_epoll_ctl(
                epollFD, EPOLL_CTL_ADD, state.listenFD, EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue,
                Self.listenerToken) == 0
        return listening
    }

    func run() {
        let capacity: Int32 = 128
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        let idleTimeout = Double(state.configuration.connectionTimeoutSeconds)
        let headTimeout = Double(state.configuration.headTimeoutSeconds)
        while true {
            // Idle timeouts need a tick only while there are connections to time out.
            var timeout: Int32 = !connections.isEmpty ? 1000 : -1
            if let next = timers.lazy.map(\.deadline).min() {
                // The coarse clock lags by up to a tick: a millisecond more than the wait, so one wake-up is enough.
                timeout = Int32(min(1000, max(0, ((next - now) * 1000).rounded(.up)) + 1))
            }
            if !bufferedInput.isEmpty { timeout = 0 }
            let count = epoll_wait(epollFD, events, capacity, timeout)
            if count < 0 {
                if errno == EINTR { continue }
                state.logger.error(
                    "epoll_wait failed", metadata: ["silo.error": "\(SystemCallError.now("epoll_wait"))"])
                break
            }
            refreshClock()
            var woken = false
            for index in 0..<count {
                let token = silo_epoll_event_token(events, index)
                let flags = silo_epoll_event_events(events, index)
                switch token {
                case Self.listenerToken:
                    if flags & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                        stopListening()
                    } else {
                        acceptConnections()
                    }
                case Self.wakeToken:
                    // Registered edge-triggered: nothing to read back (see LoopThread.start).
                    woken = true
                default:
                    guard let pointer = UnsafeRawPointer(bitPattern: UInt(token)) else { continue }
                    // Ownership: unretained; `connections` holds the object until connectionClosed, which
                    // deregisters the descriptor first, so a token never outlives its object.
                    let connection = Unmanaged<Connection>.fromOpaque(pointer).takeUnretainedValue()
                    connection.handle(events: flags)
                }
            }
            // Control work happens after the batch: closing a connection while later events of the same batch may
            // still name it would leave them pointing at a freed object.
            if woken { takeFinishedCalls() }
            if woken || state.draining.load(ordering: .relaxed) {
                if state.stopping.load(ordering: .acquiring) { break }
                if state.draining.load(ordering: .acquiring) { drain() }
            }
            if !timers.isEmpty { fireTimers() }
            if !bufferedInput.isEmpty { readBufferedInput() }
            if now - lastSweep >= 1 {
                lastSweep = now
                sweep(idle: idleTimeout > 0 ? idleTimeout : .infinity, head: headTimeout > 0 ? headTimeout : .infinity)
            }
        }
        stopListening()
        for connection in Array(connections.values) { connection.close(reason: "server stopped") }
        state.connectionBufferBytes.subtract(sweptBufferBytes, ordering: .relaxed)
        sweptBufferBytes = 0
        // Calls finished or never run are released as a closed connection would (sinks aborted, answers dropped).
        for call in mailbox.close() { call.releaseUnclaimed() }
        for call in waitingForRoom { call.releaseUnrun() }
        waitingForRoom = []
    }

    /// Queues a connection's call with the pool, or keeps it (in order) until the pool has room.
    func submit(_ call: HandlerCall) {
        if waitingForRoom.isEmpty && state.pool.submit(call, replyingTo: mailbox) { return }
        waitingForRoom.append(call)
    }

    /// Queues a call whose result nobody waits for.
    func submitDetached(_ call: HandlerCall) {
        state.pool.submitDetached(call)
    }

    /// After a wake-up: calls that waited for room go to the pool, finished calls go back to their connections.
    private func takeFinishedCalls() {
        var queued = 0
        while queued < waitingForRoom.count && state.pool.submit(waitingForRoom[queued], replyingTo: mailbox) {
            queued += 1
        }
        if queued > 0 { waitingForRoom.removeFirst(queued) }
        let finished = mailbox.take()
        guard !finished.isEmpty else { return }
        refreshClock()
        for call in finished { call.connection?.callReturned(call) }
    }

    private func acceptConnections() {
        guard listening else { return }
        // One connection per wake-up when other loops exist: a client opening many connections at once (wrk, a
        // connection pool) would otherwise land them all on the first loop to wake, and a handler blocking there
        // (a PostgreSQL lookup, an fsync) would stall all of them while the other loops idle — measured in `make
        // multinode` as one node serving 8-9k req/s instead of 21k, depending on which loop won. The listener stays
        // readable (level-triggered), so the rest go to whichever loops wait next, this one included.
        let batch = state.configuration.threadCount > 1 ? 1 : 32
        for _ in 0..<batch {
            var peerBytes = (UInt64(0), UInt64(0))
            let fd = withUnsafeMutableBytes(of: &peerBytes) { raw in
                silo_accept4_peer(
                    state.listenFD, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                    raw.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EAGAIN: return
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors or memory: back off instead of spinning on a listener that stays ready.
                    state.logger.warning("accept failed", metadata: ["silo.error": "\(SystemCallError.now("accept4"))"])
                    usleep(10_000)
                    return
                default:
                    // EINVAL after shutdown() on the listener, or another error that will repeat.
                    stopListening()
                    return
                }
            }
            let peer = withUnsafeBytes(of: &peerBytes) { PeerAddress(bytes: $0) }
            if state.draining.load(ordering: .relaxed) || !state.admit(peer) {
                _ = close(fd)
                continue
            }
            // At the limit, a keep-alive connection that is only waiting gives way to one that wants to talk, so
            // idle sockets cannot shut everyone else out.
            if state.connections.load(ordering: .relaxed) >= state.configuration.connectionLimit && !evictIdle() {
                state.release(peer)
                _ = close(fd)
                continue
            }
            let io: any ConnectionIO
            if let identity = state.configuration.tls {
                do {
                    io = try TLSConnectionIO(accepted: fd, context: identity.context, logger: state.logger)
                } catch {
                    state.logger.warning("cannot start TLS on a connection", metadata: ["silo.error": "\(error)"])
                    state.release(peer)
                    _ = close(fd)
                    continue
                }
            } else {
                io = SocketIO(accepted: fd)
            }
            let local = state.listenerLocal ?? Listener.localEndpoint(fd)
            let connection = Connection(
                io: io, peer: peer, local: local, loop: self, registeredEvents: EPOLLIN.rawValue)
            let token = UInt64(UInt(bitPattern: Unmanaged.passUnretained(connection).toOpaque()))
            guard silo_epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, EPOLLIN.rawValue, token) == 0 else {
                _ = close(fd)
                continue
            }
            connections[ObjectIdentifier(connection)] = connection
            state.connections.add(1, ordering: .relaxed)
        }
    }

    /// Closes this loop's longest-idle connection that has no request under way; false if there is none.
    private func evictIdle() -> Bool {
        var oldest: Connection?
        for connection in connections.values where connection.isIdle && !connection.hasPartialHead {
            if oldest.map({ connection.lastActivity < $0.lastActivity }) ?? true { oldest = connection }
        }
        guard let oldest else { return false }
        oldest.close(reason: "evicted at the connection limit")
        return true
    }

    private func stopListening() {
        guard listening else { return }
        listening = false
        _ = silo_epoll_ctl(epollFD, EPOLL_CTL_DEL, state.listenFD, 0, 0)
    }

    /// Shutdown began: stop accepting, close connections that have no request in progress.
    private func drain() {
        stopListening()
        for connection in Array(connections.values) where connection.isIdle {
            connection.close(reason: "server draining")
        }
    }

    /// Once a second: closes connections past their timeouts, and has keep-alive connections that have waited a
    /// second or more for their next request give their buffers back. Thousands of such connections (phones
    /// between requests) then cost what their objects and sockets take, under a KiB each, rather than a head
    /// buffer and the capacity of their largest in-memory response each (bench/results/connections.md); a busy
    /// connection keeps its buffers from one request to the next.
    private func sweep(idle idleLimit: Double, head headLimit: Double) {
        var held = 0
        var released = 0
        for connection in Array(connections.values) {
            if !connection.waitsForCall {
                let idle = now - connection.lastActivity
                let headAge = connection.headAge(now: now)
                // A lingering close waits for the client's last bytes only briefly.
                if idle > idleLimit || headAge > headLimit || (connection.isLingering && idle > 2) {
                    connection.close(reason: headAge > headLimit ? "head timeout" : "idle timeout")
                    continue
                }
                if idle >= 1 && connection.isIdle {
                    let before = connection.heldBufferBytes
                    connection.releaseIdleBuffers()
                    released += before - connection.heldBufferBytes
                }
            }
            held += connection.heldBufferBytes
        }
        state.connectionBufferBytes.add(held - sweptBufferBytes, ordering: .relaxed)
        sweptBufferBytes = held
        // Thousands of small blocks freed at once (a crowd of connections gone quiet) stay in malloc's arenas, as
        // resident as before, unless handed back; a MiB or more is worth the walk over the heap. Not on this loop:
        // malloc_trim walks every arena under its lock and makes a syscall per range it returns.
        if released >= 1 << 20 { HeapTrim.request() }
    }

    /// Reads what OpenSSL holds for the connections listed, once each; one that still has more (its buffer filled
    /// first) lists itself again, for the next turn after an epoll_wait that does not sleep.
    private func readBufferedInput() {
        let ready = bufferedInput
        bufferedInput = []
        for id in ready { connections[id]?.handle(events: EPOLLIN.rawValue) }
    }

    /// Calls `connection.stallEnded()` from this loop after `seconds`, unless it closes first.
    func resume(_ connection: Connection, after seconds: Double) {
        timers.append((now + max(0, seconds), ObjectIdentifier(connection)))
    }

    private func fireTimers() {
        let due = timers.filter { $0.deadline <= now }
        guard !due.isEmpty else { return }
        timers.removeAll { $0.deadline <= now }
        for timer in due { connections[timer.connection]?.stallEnded() }
    }

    func updateInterest(_ connection: Connection) {
        let wanted = connection.wantedEvents
        if wanted & EPOLLIN.rawValue != 0 && connection.io.hasBufferedInput {
            bufferedInput.append(ObjectIdentifier(connection))
        }
        guard wanted != connection.registeredEvents else { return }
        let token = UInt64(UInt(bitPattern: Unmanaged.passUnretained(connection).toOpaque()))
        if silo_epoll_ctl(epollFD, EPOLL_CTL_MOD, connection.fd, wanted, token) == 0 {
            connection.registeredEvents = wanted
        } else {
            connection.close(reason: "epoll_ctl failed")
        }
    }

    /// Called once by ``Connection/close(reason:)``: the descriptor leaves epoll before it is closed, so no event
    /// can name the connection afterwards.
    func connectionClosed(_ connection: Connection) {
        _ = silo_epoll_ctl(epollFD, EPOLL_CTL_DEL, connection.fd, 0, 0)
        connection.io.close()
        state.connections.subtract(1, ordering: .relaxed)
        state.release(connection.peer)
        let id = ObjectIdentifier(connection)
        if !timers.isEmpty { timers.removeAll { $0.connection == id } }
        if !bufferedInput.isEmpty { bufferedInput.removeAll { $0 == id } }
        connections.removeValue(forKey: id)
    }
}
@available(*, unavailable) extension EventLoop: Sendable {}
#endif
