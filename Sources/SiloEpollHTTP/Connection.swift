#if os(Linux)
internal import CLinux
import Glibc
import SiloCore
import SiloHTTP
import Synchronization

/// One client connection: the I/O shell around the shared ``RequestStateMachine``. It owns the buffers, parses
/// heads, frames bodies and writes responses; the machine decides what each event means for the request. Lives on
/// one event loop and is touched only by that loop's thread (hence not Sendable).
///
/// Handler calls that may block (`begin`, a sink's calls, a streamed body's `produce`) run on the server's
/// ``WorkerPool``, one at a time per connection and in order: while one runs (``runningCall``) the connection reads,
/// parses and produces nothing, and it carries on when the loop hands the finished call back. `beginInline`
/// answers, in-memory bodies and sendfile stay on the loop.
///
/// A keep-alive exchange answered inline costs one read() (the head, parsed in place from `inbound`) and one send()
/// (head and a small body from `out`, whose capacity is reused). Requests already buffered are served in order
/// before the next read; when the socket is full the connection waits for EPOLLOUT and reads nothing meanwhile, so
/// neither pipelined requests nor response bytes pile up.
///
/// Every byte goes through ``io`` (``ConnectionIO``), the seam a layer such as TLS wraps. The work is spread over
/// extensions by concern: `Connection+Input` (the read path and upload read-ahead), `Connection+Requests` (the
/// lifecycle the machine drives: heads, bodies, the machine's actions), `Connection+WorkerCalls` (the hand-off to
/// the pool and back), `Connection+Responses` (framing an answer into `out`), `Connection+Output` (the write path:
/// send, sendfile, streamed bodies) and `Connection+Faults` (staged stalls and resets). Their members are
/// internal rather than private only so that the extensions can share them; nothing outside this type uses them.
final class Connection {
    enum Phase {
        case awaitingHead
        case readingBody
        /// The last response is being written; the connection closes once it is out.
        case closing
        /// The last response is out and the write side shut down; what the client still sends is read and dropped
        /// for a moment, so that closing with unread bytes does not reset the connection (a reset can destroy the
        /// answer before the client has read it).
        case lingering
        case closed
    }

    /// What follows the bytes in `out`.
    enum OutBody {
        case none
        case file(OwnedFileDescriptor, offset: Int64, remaining: Int64)
        /// `remaining` nil for a body of unknown length; `chunked` frames each block.
        case stream(any ResponseBodyProducer, remaining: Int64?, chunked: Bool)
    }

    /// The request being served.
    struct Exchange {
        var keepAlive = true
        var isHeadMethod = false
        var isHTTP10 = false
    }

    /// The socket, through which every read and write goes.
    let io: any ConnectionIO
    /// The descriptor epoll reports readiness for.
    var fd: Int32 { io.fd }
    /// The client's address, for per-client limits and for the handler.
    let peer: PeerAddress
    /// The address and port the client reached, for the handler (what this server is called, whatever `Host` says).
    let local: LocalEndpoint?
    unowned let loop: EventLoop
    /// The loop's server state, held directly: reached through the unowned `loop` it cost a strong retain and a
    /// release per access, several per request.
    let state: ServerState
    /// The loop's inline answerer, held directly for the same reason (a connection lives on its loop's thread).
    let inline: (any InlineAnswerer)?
    var phase = Phase.awaitingHead
    /// The events registered with epoll, so epoll_ctl is called only on a change.
    var registeredEvents: UInt32
    var lastActivity: Double
    /// When the first byte of a head still incomplete arrived: a head must be complete within the idle timeout,
    /// however slowly its bytes trickle in (slowloris).
    var partialHeadSince: Double?

    /// How long the head now being received has been incomplete.
    func headAge(now: Double) -> Double {
        guard phase == .awaitingHead, let since = partialHeadSince else { return 0 }
        return now - since
    }

    // Inbound: bytes [start, end) of `inbound` are received and not yet consumed.
    var inbound = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    var start = 0
    var end = 0
    /// Where the search for the end of a partial head resumes (relative to `start`).
    var headScanResume = 0

    var exchange = Exchange()
    /// Unchecked (also `out`): the connection is confined to its loop's thread, and what mutates these (the pure
    /// machine's methods, appends) calls nothing that could reach the connection again, so the dynamic exclusivity
    /// check (a thread-local access set, about 80 instructions per access, a dozen per request) could find nothing.
    @exclusivity(unchecked) var machine: RequestStateMachine
    /// How the body of the request being served is framed.
    var framing = RequestFraming.none
    var bodyRemaining: Int64 = 0
    var chunked: ChunkedDecoder?
    /// The handler call this connection waits for (on a worker, or queued for one); nil when none runs. Only its
    /// identity: the call holds the connection (so the buffers a chunk lies in outlive it), not the other way round.
    var runningCall: ObjectIdentifier?
    /// The body's last bytes went with the chunk the sink is receiving: the body ends when that call returns.
    var bodyEndPending = false
    /// EPOLLIN was turned off because bytes arrived while a call ran (it is turned off only then, to spare two
    /// epoll_ctl calls per request in the common case where the client waits quietly).
    var inputPaused = false
    /// Body bytes are read into this buffer while a sink receives, so a chunk with a worker is not overwritten by
    /// another connection's read (the loop's shared buffer serves discarded bodies and lingering).
    var bodyBuffer: UnsafeMutableRawBufferPointer?
    /// While the sink receives one chunk the loop reads the next into this buffer (`readAhead` bytes), so reading
    /// and the sink's work overlap; it is handed on when the call returns, and the two buffers swap. One read
    /// ahead at most: two buffers per uploading connection, `readBufferSize` bytes together.
    var spareBuffer: UnsafeMutableRawBufferPointer?
    var readAhead = 0
    /// The sink's own memory for the next body bytes (``RequestBodySink/nextChunkBuffer()``), of which `lentFilled`
    /// bytes are read: body bytes go straight there and to the sink once it is full or the body ends, so the sink
    /// copies nothing and gets one call per buffer rather than per read. Lent until the next call on the sink;
    /// the connection's own body buffers are not used then (and not allocated).
    var lent: UnsafeMutableRawBufferPointer?
    var lentFilled = 0
    /// The socket's low-water mark (``ConnectionIO/reportReadable(atLeast:)``): raised while a lent buffer fills
    /// with a body of known length, so the loop wakes once per large read rather than per arriving segment.
    var lowWater = 1
    /// The sink of this body lends its buffers: nothing is read ahead (the bytes would have nowhere to go but a
    /// copy).
    var sinkLends = false

    // Outbound: bytes [outStart, out.count) of `out`, then `outBody`.
    @exclusivity(unchecked) var out = OutputBytes()
    var outStart = 0
    var outBody = OutBody.none
    var streamBuffer: UnsafeMutableRawBufferPointer?
    /// Waiting for EPOLLOUT.
    var outputBlocked = false
    /// Responses (to handler requests) planned but not yet written in full.
    var unsentResponses = 0
    /// Close by lingering: the client may still be sending (a refused head or body).
    var lingers = false
    var lingered: Int64 = 0
    /// How much a lingering close reads and drops before it closes anyway.
    var lingerLimit: Int64 = 1024 * 1024
    /// The streamed body of a response with a staged stall (``TransportFault``), while it is being sent.
    var stalledBody: (body: FaultedBody, seconds: Double)?
    /// Output waits for the loop's timer (a staged stall): nothing is written or read until it fires.
    var stalled = false

    init(io: any ConnectionIO, peer: PeerAddress, local: LocalEndpoint?, loop: EventLoop, registeredEvents: UInt32) {
        self.io = io
        self.peer = peer
        self.local = local
        self.loop = loop
        self.state = loop.state
        self.inline = loop.inline
        self.registeredEvents = registeredEvents
        self.machine = RequestStateMachine(maxDiscardedBodyBytes: loop.state.configuration.maxDiscardedBodyBytes)
        self.lastActivity = loop.now
        // The first head is due within the head timeout of the accept, even if no byte of it ever comes.
        self.partialHeadSince = loop.now
    }

    /// Part of a head has arrived (or, on a new connection, none yet): not a connection to evict.
    var hasPartialHead: Bool { phase == .awaitingHead && partialHeadSince != nil && start < end }

    /// The last reference may go with a finished ``HandlerCall`` on a worker, after the loop is done with the
    /// connection; nothing here touches the loop.
    deinit {
        if inbound.baseAddress != nil { inbound.deallocate() }
        streamBuffer?.deallocate()
        bodyBuffer?.deallocate()
        spareBuffer?.deallocate()
    }

    /// No request has started and nothing is left to send: safe to close when draining.
    var isIdle: Bool {
        phase == .awaitingHead && machine.isIdle && runningCall == nil && start == end && unsentResponses == 0
            && !outputBlocked
    }

    /// Bytes of the buffers this connection owns (a sink's lent buffer is the sink's).
    var heldBufferBytes: Int {
        inbound.count + out.capacity + (streamBuffer?.count ?? 0) + (bodyBuffer?.count ?? 0)
            + (spareBuffer?.count ?? 0)
    }

    /// An idle connection (``isIdle``) gives its buffers back; the next request allocates them again.
    func releaseIdleBuffers() {
        guard isIdle else { return }
        if inbound.baseAddress != nil {
            inbound.deallocate()
            inbound = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        }
        start = 0
        end = 0
        headScanResume = 0
        if outStart >= out.count {
            out.removeAll(keepingAtMost: 0)
            outStart = 0
        }
        if case .none = outBody {
            streamBuffer?.deallocate()
            streamBuffer = nil
        }
        releaseBodyBuffer()
    }

    // MARK: - Events

    func handle(events: UInt32) {
        // A TLS read that waited for room to write (its handshake answer) goes on once the socket is writable.
        let events = io.readWaitsForWritable && events & EPOLLOUT.rawValue != 0 ? events | EPOLLIN.rawValue : events
        if phase == .lingering {
            linger()
            return
        }
        if stalled {
            // Registered for no events while stalled: only a hang-up or an error arrives.
            close(reason: "hang-up during a staged stall")
            return
        }
        if events & EPOLLOUT.rawValue != 0 && outputBlocked {
            outputBlocked = false
            flush()
            guard phase != .closed else { return }
            if !outputBlocked {
                process()
            }
            updateInterest()
            return
        }
        let hangUp = events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
        if hangUp && (events & EPOLLIN.rawValue == 0 || runningCall != nil) {
            // With a call running the bytes are not read; a reset or a full close ends the connection now (the
            // call's result is dropped when it returns).
            close(reason: "hang-up")
            return
        }
        if events & EPOLLIN.rawValue != 0 && runningCall != nil {
            if canReadAhead {
                readBodyAhead()
                // Nothing there after all (EAGAIN): keep waiting for bytes.
                if phase == .closed || readAhead == 0 { return }
            }
            // Nothing (more) is read while a call runs: stop asking until it returns.
            inputPaused = true
            updateInterest()
            return
        }
        if events & EPOLLIN.rawValue != 0 {
            readAvailable()
            guard phase != .closed else { return }
            updateInterest()
        }
    }

    var isLingering: Bool { phase == .lingering }

    /// A handler call is running for this connection: not idle, however long the call takes.
    var waitsForCall: Bool { runningCall != nil }

    /// The events this connection waits for now (none during a stall: the loop's timer ends it; none while a
    /// call runs and bytes wait unread: the loop hands the call back).
    var wantedEvents: UInt32 {
        if stalled { return 0 }
        if outputBlocked { return EPOLLOUT.rawValue }
        if inputPaused && runningCall != nil { return 0 }
        return io.readWaitsForWritable ? EPOLLOUT.rawValue : EPOLLIN.rawValue
    }

    func updateInterest() {
        guard phase != .closed else { return }
        loop.updateInterest(self)
    }

    // MARK: - Closing

    /// Closes the socket once; aborts a body in progress, closes a producer, and ends the requests it held.
    func close(reason: String?) {
        guard phase != .closed else { return }
        phase = .closed
        if let reason {
            state.logger.trace("connection closed", metadata: ["silo.http.reason": reason])
        }
        let completion = machine.completed()
        if let sink = completion.abort { callDetached(.abort(sink)) }
        switch outBody {
        case .stream(let producer, _, _):
            // A producer a worker is using is closed when its call returns (``releaseAbandoned(_:)``).
            if runningCall == nil { producer.close() }
        case .file, .none: break
        }
        outBody = .none
        stalledBody = nil
        stalled = false
        var ended = unsentResponses
        if completion.endsRequest { ended += 1 }
        unsentResponses = 0
        releaseBodyBuffer()
        if ended > 0 { state.inFlight.subtract(ended, ordering: .releasing) }
        loop.connectionClosed(self)
    }
}
@available(*, unavailable) extension Connection: Sendable {}
#endif
