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
    private enum OutBody {
        case none
        case file(OwnedFileDescriptor, offset: Int64, remaining: Int64)
        /// `remaining` nil for a body of unknown length; `chunked` frames each block.
        case stream(any ResponseBodyProducer, remaining: Int64?, chunked: Bool)
    }

    /// The request being served.
    private struct Exchange {
        var keepAlive = true
        var isHeadMethod = false
        var isHTTP10 = false
    }

    let fd: Int32
    /// The client's address, for per-client limits and for the handler.
    let peer: PeerAddress
    private unowned let loop: EventLoop
    private(set) var phase = Phase.awaitingHead
    /// The events registered with epoll, so epoll_ctl is called only on a change.
    var registeredEvents: UInt32
    private(set) var lastActivity: Double
    /// When the first byte of a head still incomplete arrived: a head must be complete within the idle timeout,
    /// however slowly its bytes trickle in (slowloris).
    private var partialHeadSince: Double?

    /// How long the head now being received has been incomplete.
    func headAge(now: Double) -> Double {
        guard phase == .awaitingHead, let since = partialHeadSince else { return 0 }
        return now - since
    }

    // Inbound: bytes [start, end) of `inbound` are received and not yet consumed.
    private var inbound = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private var start = 0
    private var end = 0
    /// Where the search for the end of a partial head resumes (relative to `start`).
    private var headScanResume = 0

    private var exchange = Exchange()
    private var machine: RequestStateMachine
    /// How the body of the request being served is framed.
    private var framing = RequestFraming.none
    private var bodyRemaining: Int64 = 0
    private var chunked: ChunkedDecoder?
    /// The handler call this connection waits for (on a worker, or queued for one); nil when none runs. Only its
    /// identity: the call holds the connection (so the buffers a chunk lies in outlive it), not the other way round.
    private var runningCall: ObjectIdentifier?
    /// The body's last bytes went with the chunk the sink is receiving: the body ends when that call returns.
    private var bodyEndPending = false
    /// EPOLLIN was turned off because bytes arrived while a call ran (it is turned off only then, to spare two
    /// epoll_ctl calls per request in the common case where the client waits quietly).
    private var inputPaused = false
    /// Body bytes are read into this buffer while a sink receives, so a chunk with a worker is not overwritten by
    /// another connection's read (the loop's shared buffer serves discarded bodies and lingering).
    private var bodyBuffer: UnsafeMutableRawBufferPointer?
    /// While the sink receives one chunk the loop reads the next into this buffer (`readAhead` bytes), so reading
    /// and the sink's work overlap; it is handed on when the call returns, and the two buffers swap. One read
    /// ahead at most: two buffers per uploading connection, `readBufferSize` bytes together.
    private var spareBuffer: UnsafeMutableRawBufferPointer?
    private var readAhead = 0

    // Outbound: bytes [outStart, out.count) of `out`, then `outBody`.
    private var out: [UInt8] = []
    private var outStart = 0
    private var outBody = OutBody.none
    private var streamBuffer: UnsafeMutableRawBufferPointer?
    /// Waiting for EPOLLOUT.
    private(set) var outputBlocked = false
    /// Responses (to handler requests) planned but not yet written in full.
    private var unsentResponses = 0
    /// Close by lingering: the client may still be sending (a refused head or body).
    private var lingers = false
    private var lingered = 0
    /// The streamed body of a response with a staged stall (``TransportFault``), while it is being sent.
    private var stalledBody: (body: FaultedBody, seconds: Double)?
    /// Output waits for the loop's timer (a staged stall): nothing is written or read until it fires.
    private(set) var stalled = false

    init(fd: Int32, peer: PeerAddress, loop: EventLoop, registeredEvents: UInt32) {
        self.fd = fd
        self.peer = peer
        self.loop = loop
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

    private var state: ServerState { loop.state }

    /// No request has started and nothing is left to send: safe to close when draining.
    var isIdle: Bool {
        phase == .awaitingHead && machine.isIdle && runningCall == nil && start == end && unsentResponses == 0
            && !outputBlocked
    }

    // MARK: - Events

    func handle(events: UInt32) {
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

    private func readAvailable() {
        if phase == .readingBody && start == end {
            readBodyDirectly()
            return
        }
        if end == inbound.count {
            guard makeRoom() else {
                process()
                return
            }
        }
        guard let base = inbound.baseAddress else { return }
        let count = read(fd, base + end, inbound.count - end)
        if count <= 0 {
            readFailed(count)
            return
        }
        lastActivity = loop.now
        end += count
        process()
    }

    /// Reads body bytes into a large body buffer (``readBuffer()``) and hands them to the sink from there, so uploads
    /// arrive in big chunks without passing through the head buffer.
    private func readBodyDirectly() {
        let buffer = readBuffer()
        guard let count = readBody(into: buffer), let base = buffer.baseAddress else { return }
        consumeRead(base, count)
        guard phase != .closed else { return }
        process()
    }

    /// Hands `count` body bytes read at `base` on; what follows the end of a chunked body goes to `inbound`.
    private func consumeRead(_ base: UnsafeMutableRawPointer, _ count: Int) {
        let used = consumeBody(UnsafeMutableRawBufferPointer(start: base, count: count))
        guard phase != .closed else { return }
        if used < count && phase != .closing {
            // (A chunk with a worker lies in a body buffer, before `used`; `inbound` holds none of it.)
            // A chunked body ended inside this read: what follows is the next request.
            append(UnsafeRawBufferPointer(start: base + used, count: count - used))
        }
    }

    /// The sink is receiving a chunk and more of the body may follow: the next read can go to the spare buffer.
    private var canReadAhead: Bool {
        guard readAhead == 0, phase == .readingBody, start == end, !bodyEndPending, case .receiving = machine.state
        else { return false }
        return chunked != nil || bodyRemaining > 0
    }

    /// Reads the next piece of the body into the spare buffer while the sink works on the previous one.
    private func readBodyAhead() {
        let buffer = spareBuffer ?? allocateBodyBuffer()
        spareBuffer = buffer
        // `bodyRemaining` already excludes the chunk with the sink.
        guard let count = readBody(into: buffer) else { return }
        readAhead = count
    }

    /// One read of body bytes into `buffer`: with a known length no further than the body's end, so no bytes of the
    /// next request land there. Nil when the read failed or hit the end of the stream (``readFailed(_:)`` has
    /// dealt with the connection).
    private func readBody(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard let base = buffer.baseAddress else { return nil }
        let limit = chunked == nil ? Int(min(Int64(buffer.count), bodyRemaining)) : buffer.count
        let count = read(fd, base, limit)
        if count <= 0 {
            readFailed(count)
            return nil
        }
        lastActivity = loop.now
        return count
    }

    /// The sink is done with its chunk: what was read ahead goes on, and the buffers swap.
    private func consumeReadAhead() {
        let count = readAhead
        readAhead = 0
        guard let ahead = spareBuffer, let base = ahead.baseAddress else { return }
        spareBuffer = bodyBuffer
        bodyBuffer = ahead
        consumeRead(base, count)
    }

    /// Where body bytes are read: the connection's own buffer while a sink may take them to a worker, the loop's
    /// while they are only dropped.
    private func readBuffer() -> UnsafeMutableRawBufferPointer {
        guard case .readingBody = machine.state else { return loop.bodyBuffer }
        if let bodyBuffer { return bodyBuffer }
        let buffer = allocateBodyBuffer()
        bodyBuffer = buffer
        return buffer
    }

    private func allocateBodyBuffer() -> UnsafeMutableRawBufferPointer {
        // Half the configured size (there may be two); no bigger than a body of known length needs, so a small
        // upload does not map and unmap a large block.
        let size = state.configuration.readBufferSize / 2
        let capacity = chunked == nil ? Int(min(Int64(size), max(4096, bodyRemaining))) : size
        return UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
    }

    private func releaseBodyBuffer() {
        guard runningCall == nil else { return }
        bodyBuffer?.deallocate()
        bodyBuffer = nil
        spareBuffer?.deallocate()
        spareBuffer = nil
        readAhead = 0
    }

    private func readFailed(_ result: Int) {
        if result < 0 && (errno == EAGAIN || errno == EINTR) { return }
        // End of stream or a reset: the client is gone; a body in progress is aborted.
        close(reason: result == 0 ? "client closed" : "read failed")
    }

    /// Makes space at the end of `inbound`: drops consumed bytes, then grows up to the head limit.
    private func makeRoom() -> Bool {
        if start > 0, let base = inbound.baseAddress {
            let live = end - start
            if live > 0 { memmove(base, base + start, live) }
            start = 0
            end = live
            if end < inbound.count { return true }
        }
        let limit = state.configuration.maxRequestHeadBytes
        guard inbound.count < limit else { return false }
        grow(to: inbound.count == 0 ? 4096 : min(limit, inbound.count * 2))
        return true
    }

    private func grow(to capacity: Int) {
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        if let old = inbound.baseAddress, let new = bigger.baseAddress {
            if end > start { memcpy(new, old + start, end - start) }
            inbound.deallocate()
        }
        end -= start
        start = 0
        inbound = bigger
    }

    private func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if inbound.count - end < bytes.count {
            grow(to: max(inbound.count, end - start + bytes.count, 4096))
        }
        guard let base = inbound.baseAddress else { return }
        memcpy(base + end, source, bytes.count)
        end += bytes.count
    }

    // MARK: - Requests

    /// Serves what is buffered: heads are parsed and handled, body bytes delivered, responses queued, in order.
    /// Stops when more bytes are needed or output must drain first.
    private func process() {
        while phase != .closed {
            if outputBlocked || stalled || runningCall != nil { return }
            if case .none = outBody {
                if out.count - outStart > 64 * 1024 { flush() }
            } else {
                flush()
            }
            guard phase != .closed, !outputBlocked else { return }
            if case .none = outBody {} else { return }
            switch phase {
            case .awaitingHead:
                guard start < end, let base = inbound.baseAddress else {
                    flush()
                    return
                }
                if headScanResume == 0 {
                    // Line breaks before a request line belong to no request: dropped once, never rescanned.
                    start += RequestHeadParser.leadingLineBreaks(
                        UnsafeRawBufferPointer(start: base + start, count: end - start))
                    guard start < end else {
                        flush()
                        return
                    }
                }
                let bytes = UnsafeRawBufferPointer(start: base + start, count: end - start)
                switch RequestHeadParser.parse(bytes, resumeAt: headScanResume) {
                case .incomplete(let resumeAt):
                    headScanResume = resumeAt
                    if partialHeadSince == nil { partialHeadSince = loop.now }
                    if bytes.count >= state.configuration.maxRequestHeadBytes {
                        reject(431, "request head too large")
                    }
                    flush()
                    return
                case .invalid(let status, let reason):
                    reject(status, reason)
                case .complete(let request, let consumed):
                    start += consumed
                    headScanResume = 0
                    partialHeadSince = nil
                    begin(request)
                }
            case .readingBody:
                guard start < end, let base = inbound.baseAddress else {
                    flush()
                    return
                }
                // A chunk handed to a worker stays where it is: nothing touches `inbound` until the call returns.
                start += consumeBody(UnsafeMutableRawBufferPointer(start: base + start, count: end - start))
            case .closing, .lingering, .closed:
                flush()
                return
            }
            if start == end {
                start = 0
                end = 0
            }
        }
    }

    private func begin(_ request: ParsedRequest) {
        var request = request
        request.head.peer = peer
        exchange = Exchange(
            keepAlive: request.keepAlive, isHeadMethod: request.isHeadMethod, isHTTP10: request.isHTTP10)
        framing = request.framing
        guard
            case .callBegin = machine.headArrived(
                hasBody: request.framing != .none, awaitsContinue: request.awaitsContinue)
        else {
            close(reason: "request out of order")
            return
        }
        state.inFlight.add(1, ordering: .relaxed)
        let work: HandlerCall.Work
        switch state.handler.beginInline(request.head) {
        case .answered(let answer):
            loop.refreshClock()
            lastActivity = loop.now
            began(answer)
            return
        case .declined: work = .begin(state.handler, request.head)
        case .deferred(let rest): work = .resume(rest)
        }
        // Answers already queued go out before the connection waits for the worker.
        if outStart < out.count {
            flush()
            guard phase != .closed else { return }
        }
        call(work)
    }

    private func began(_ disposition: RequestDisposition) {
        switch machine.began(disposition) {
        case .readBody(let sendContinue):
            if sendContinue { ResponseWriter.append("HTTP/1.1 100 Continue\r\n\r\n", to: &out) }
            startBody()
        case .proceed:
            // The answer is known; the body, if any, is read and dropped first.
            startBody()
        case let action:
            carryOut(action)
        }
    }

    /// Hands a call that may block to a worker; the connection waits (reads and produces nothing) until
    /// ``callReturned(_:)``.
    private func call(_ work: HandlerCall.Work) {
        let call = HandlerCall(work, for: self)
        runningCall = ObjectIdentifier(call)
        loop.submit(call)
    }

    /// A call nobody waits for (aborting a sink, closing a producer), on a worker.
    private func callDetached(_ work: HandlerCall.Work) {
        loop.submitDetached(HandlerCall(work, for: nil))
    }

    /// Does what the machine asked for after a head, a chunk, the end of the body or a handler call.
    private func carryOut(_ action: RequestStateMachine.Action) {
        switch action {
        case .proceed, .discard, .callBegin, .readBody:
            break
        case .deliver(let sink):
            // Only ``deliver(_:)`` gets this action, and passes the chunk itself.
            assertionFailure("deliver without a chunk for \(sink)")
        case .finish(let sink):
            call(.finish(sink))
        case .respond(let response, let closing, let gaveUp):
            if let gaveUp { callDetached(.abort(gaveUp)) }
            if closing == .lingering {
                exchange.keepAlive = false
                lingers = true
            }
            respond(response)
        case .closeConnection:
            close(reason: "request out of order")
        case .abort(let sink):
            callDetached(.abort(sink))
        case .drop(let response):
            callDetached(.drop(response))
        }
    }

    /// The loop hands back a finished call of this connection.
    func callReturned(_ finished: HandlerCall) {
        guard ObjectIdentifier(finished) == runningCall else { return }
        runningCall = nil
        if phase == .closed {
            releaseAbandoned(finished)
            return
        }
        lastActivity = loop.now
        switch finished.result {
        case .began(let disposition):
            began(disposition)
        case .received(let answer):
            carryOut(machine.receiveReturned(answer))
            if bodyEndPending && phase != .closed {
                bodyEnded()
            } else if readAhead > 0 && phase == .readingBody {
                consumeReadAhead()
            }
        case .finished(let response):
            carryOut(machine.finishReturned(response))
        case .produced(let count):
            streamProduced(count)
        case .produceFailed(let error):
            state.logger.debug("response body producer failed", metadata: ["silo.error": "\(error)"])
            close(reason: "producer failed")
        case .pending, .done:
            break
        }
        guard phase != .closed else { return }
        if runningCall == nil {
            flush()
            guard phase != .closed else { return }
            if !outputBlocked && runningCall == nil { process() }
        }
        guard phase != .closed else { return }
        if runningCall == nil && inputPaused { inputPaused = false }
        updateInterest()
    }

    /// A call returned after the connection closed: its result is released as the machine says (a sink aborted,
    /// an answer dropped); a producer it was producing from is closed now that it is free.
    private func releaseAbandoned(_ finished: HandlerCall) {
        let action: RequestStateMachine.Action
        switch (finished.work, finished.result) {
        case (.begin, .began(let disposition)): action = machine.began(disposition)
        case (.receive, .received(let answer)): action = machine.receiveReturned(answer)
        case (.finish, .finished(let response)): action = machine.finishReturned(response)
        case (.produce(let producer, _), _):
            callDetached(.closeProducer(producer))
            return
        default: return
        }
        switch action {
        case .abort(let sink): callDetached(.abort(sink))
        case .drop(let response): callDetached(.drop(response))
        default: break
        }
    }

    private func startBody() {
        switch framing {
        case .chunked:
            chunked = ChunkedDecoder(maxTrailerBytes: state.configuration.maxRequestHeadBytes)
        case .length(let length):
            chunked = nil
            bodyRemaining = length
        case .none:
            chunked = nil
            bodyRemaining = 0
        }
        phase = .readingBody
        if framing == .none { bodyEnded() }
    }

    /// Feeds body bytes to the consumer; returns how many were part of the body. The buffer is this connection's
    /// or the loop's, both writable: chunked framing is squeezed out in place, so the sink gets one piece per read
    /// however small the client's chunks are.
    private func consumeBody(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        if var decoder = chunked {
            var index = 0
            var gathered = 0
            while true {
                let step = decoder.next(UnsafeRawBufferPointer(bytes), &index)
                switch step {
                case .data(let range):
                    // Data only moves towards the front, over framing already consumed.
                    if range.lowerBound != gathered { memmove(base + gathered, base + range.lowerBound, range.count) }
                    gathered += range.count
                case .needMore:
                    chunked = decoder
                    deliver(UnsafeRawBufferPointer(start: base, count: gathered))
                    return index
                case .end:
                    chunked = decoder
                    deliver(UnsafeRawBufferPointer(start: base, count: gathered))
                    endBodyAfterDelivery()
                    return index
                case .invalid(let reason):
                    failBody(reason)
                    return bytes.count
                }
            }
        }
        let count = Int(min(Int64(bytes.count), bodyRemaining))
        bodyRemaining -= Int64(count)
        deliver(UnsafeRawBufferPointer(start: base, count: count))
        if bodyRemaining == 0 { endBodyAfterDelivery() }
        return count
    }

    /// The last body byte was seen: the body ends now, or when the sink has received it.
    private func endBodyAfterDelivery() {
        guard phase == .readingBody else { return }
        if runningCall != nil {
            bodyEndPending = true
        } else {
            bodyEnded()
        }
    }

    private func deliver(_ chunk: UnsafeRawBufferPointer) {
        guard chunk.count > 0 else { return }
        switch machine.bodyChunk(count: chunk.count) {
        case .deliver(let sink):
            call(.receive(sink, chunk))
        case .closeConnection:
            state.logger.debug("request body too long to drop, closing")
            close(reason: "body too long to drop")
        default:
            break
        }
    }

    private func bodyEnded() {
        bodyEndPending = false
        chunked = nil
        phase = .awaitingHead
        releaseBodyBuffer()
        carryOut(machine.bodyEnded())
    }

    /// A malformed chunked body: the sink is aborted and the client told why; the connection closes.
    private func failBody(_ reason: String) {
        carryOut(machine.bodyFailed())
        chunked = nil
        releaseBodyBuffer()
        exchange.keepAlive = false
        lingers = true
        respond(errorResponse(400, reason))
    }

    /// A head the parser refused: answer and close (the stream cannot be trusted to find the next request).
    private func reject(_ status: Int, _ reason: String) {
        state.logger.debug("bad request", metadata: ["silo.http.status": "\(status)", "silo.http.reason": reason])
        exchange = Exchange(keepAlive: false, isHeadMethod: false, isHTTP10: false)
        start = end
        lingers = true
        queue(errorResponse(status, reason), countsInFlight: false)
    }

    private func errorResponse(_ status: Int, _ reason: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: .bytes(Array("\(reason)\n".utf8)))
    }

    private func respond(_ response: HTTPResponse) {
        // From here the response counts in flight (`unsentResponses`) until it is written; the machine is done.
        _ = machine.completed()
        queue(response, countsInFlight: true)
    }

    /// Appends the head (and a body in memory) to `out` and sets up a file or stream body to follow.
    private func queue(_ proposed: HTTPResponse, countsInFlight: Bool) {
        if countsInFlight { unsentResponses += 1 }
        var response = proposed
        if !(200...999).contains(response.status) {
            // Interim (1xx) and impossible statuses cannot be a final answer; the transport owns `100 Continue`.
            state.logger.error("invalid response status", metadata: ["silo.http.status": "\(response.status)"])
            exchange.keepAlive = false
            if case .stream(_, let producer) = response.body { producer.close() }
            response = errorResponse(500, "invalid response status")
        }
        if let fault = response.transportFault {
            switch fault {
            case .resetConnection:
                if case .stream(_, let producer) = response.body { producer.close() }
                resetConnection()
                return
            case .stallResponse(let seconds):
                // The response is queued below and held back by the stall, head and all.
                stall(seconds)
            case .breakBody(let after), .stallBody(let after, _):
                // A cut is the producer's error at the fault point (the connection closes, as for any failing
                // producer); a stall is checked before each block.
                if response.body.length != 0 {
                    let body = FaultedBody(response.body, faultAfter: after)
                    response.body = .stream(length: body.length, body)
                    if case .stallBody(_, let seconds) = fault { stalledBody = (body, seconds) }
                }
            }
        }
        let plan = ResponsePlan(
            response, isHeadMethod: exchange.isHeadMethod, isHTTP10: exchange.isHTTP10,
            keepAlive: exchange.keepAlive, draining: state.draining.load(ordering: .relaxed))
        if plan.closesConnection { phase = .closing }
        let refused = ResponseWriter.appendHead(
            response, plan: plan, isHTTP10: exchange.isHTTP10, dateLine: loop.dateLine, to: &out)
        if !refused.isEmpty {
            state.logger.error(
                "response header with a control character dropped",
                metadata: ["silo.http.headers": refused.joined(separator: ",")])
        }
        guard plan.sendsBody else {
            // The body is described, not sent: a producer is still closed once; a file closes with its owner.
            if case .stream(_, let producer) = response.body { producer.close() }
            stalledBody = nil
            return
        }
        switch response.body {
        case .empty:
            break
        case .bytes(let bytes):
            out.append(contentsOf: bytes)
        case .file(let descriptor, let offset, let length):
            if length > 0 { outBody = .file(descriptor, offset: offset, remaining: length) }
        case .stream(let length, let producer):
            if let length, length <= 0 {
                producer.close()
            } else {
                outBody = .stream(producer, remaining: length, chunked: plan.chunked)
            }
        }
    }

    // MARK: - Output

    /// Writes `out`, then the file or stream body, until everything is sent or the socket is full.
    private func flush() {
        if stalled { return }
        while phase != .closed {
            if outStart < out.count {
                let more = moreFollows
                let sent = out.withUnsafeBytes { bytes -> Int in
                    guard let base = bytes.baseAddress else { return 0 }
                    return send(
                        fd, base + outStart, bytes.count - outStart,
                        Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0))
                }
                if sent < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN {
                        block()
                        return
                    }
                    close(reason: "send failed")
                    return
                }
                lastActivity = loop.now
                outStart += sent
                if outStart < out.count {
                    // A short write means the socket buffer is full; asking again would only return EAGAIN.
                    block()
                    return
                }
                if out.capacity > 256 * 1024 {
                    out = []
                } else {
                    out.removeAll(keepingCapacity: true)
                }
                outStart = 0
            }
            switch outBody {
            case .none:
                responsesSent()
                return
            case .file(let descriptor, let offset, let remaining):
                guard sendFile(descriptor, offset: offset, remaining: remaining) else { return }
            case .stream(let producer, let remaining, let chunked):
                // While a worker produces the next block, only what is already in `out` goes out.
                guard runningCall == nil, produce(producer, remaining: remaining, chunked: chunked) else { return }
            }
        }
    }

    /// Body bytes follow what is in `out` (so the kernel may hold a partial segment for them).
    private var moreFollows: Bool {
        if case .none = outBody { return false }
        return true
    }

    /// Sends part of a file; returns true to go on flushing.
    private func sendFile(_ descriptor: OwnedFileDescriptor, offset: Int64, remaining: Int64) -> Bool {
        var position = off_t(offset)
        let want = Int(min(remaining, 1 << 30))
        let sent = sendfile(fd, descriptor.rawValue, &position, want)
        if sent < 0 {
            if errno == EINTR { return true }
            if errno == EAGAIN {
                block()
                return false
            }
            close(reason: "sendfile failed")
            return false
        }
        if sent == 0 {
            // The file is shorter than the length promised in the head: the response cannot be completed.
            close(reason: "file shorter than its declared length")
            return false
        }
        lastActivity = loop.now
        let left = remaining - Int64(sent)
        if left == 0 {
            outBody = .none
            return true
        }
        outBody = .file(descriptor, offset: offset + Int64(sent), remaining: left)
        if sent < want {
            block()
            return false
        }
        return true
    }

    /// Has a worker produce the next block of a streamed body; returns true to go on flushing (never: the block
    /// comes back in ``streamProduced(_:)``).
    private func produce(_ producer: any ResponseBodyProducer, remaining: Int64?, chunked: Bool) -> Bool {
        let blockSize = state.configuration.streamBlockSize
        let buffer: UnsafeMutableRawBufferPointer
        if let existing = streamBuffer {
            buffer = existing
        } else {
            buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 16)
            streamBuffer = buffer
        }
        let limit = remaining.map { Int(min(Int64(blockSize), $0)) } ?? blockSize
        if let staged = stalledBody, staged.body === producer, staged.body.atFaultPoint {
            // What precedes the fault point is on the wire: wait, then go on with the rest.
            staged.body.passFaultPoint()
            stalledBody = nil
            stall(staged.seconds)
            return false
        }
        call(.produce(producer, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<limit])))
        return false
    }

    /// A worker produced `count` bytes into `streamBuffer`: they go into `out`, framed when chunked.
    private func streamProduced(_ count: Int) {
        guard case .stream(let producer, let remaining, let chunked) = outBody, let buffer = streamBuffer else {
            return
        }
        let limit = remaining.map { Int(min(Int64(buffer.count), $0)) } ?? buffer.count
        let produced = min(max(count, 0), limit)
        if produced == 0 {
            if remaining != nil {
                // Fewer bytes than the declared Content-Length: the client must see a cut connection.
                close(reason: "stream shorter than its declared length")
                return
            }
            finishStream(producer)
            if chunked { ResponseWriter.append("0\r\n\r\n", to: &out) }
            return
        }
        if chunked {
            ResponseWriter.appendHex(produced, to: &out)
            ResponseWriter.append("\r\n", to: &out)
        }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<produced]))
        if chunked { ResponseWriter.append("\r\n", to: &out) }
        if let remaining {
            let left = remaining - Int64(produced)
            if left == 0 {
                finishStream(producer)
            } else {
                outBody = .stream(producer, remaining: left, chunked: chunked)
            }
        }
    }

    private func finishStream(_ producer: any ResponseBodyProducer) {
        outBody = .none
        stalledBody = nil
        producer.close()
        streamBuffer?.deallocate()
        streamBuffer = nil
    }

    private func block() {
        outputBlocked = true
    }

    /// Everything queued is on the wire: those requests are complete.
    private func responsesSent() {
        if unsentResponses > 0 {
            state.inFlight.subtract(unsentResponses, ordering: .releasing)
            unsentResponses = 0
        }
        guard phase == .closing else { return }
        if lingers {
            phase = .lingering
            lastActivity = loop.now
            _ = shutdown(fd, Int32(SHUT_WR))
        } else {
            close(reason: nil)
        }
    }

    /// Reads and drops what the client still sends after the final answer, up to a bound.
    private func linger() {
        let buffer = loop.bodyBuffer
        guard let base = buffer.baseAddress else { return }
        let count = read(fd, base, buffer.count)
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return }
        lingered += max(count, 0)
        if count <= 0 || lingered > 1024 * 1024 { close(reason: nil) }
    }

    var isLingering: Bool { phase == .lingering }

    /// A handler call is running for this connection: not idle, however long the call takes.
    var waitsForCall: Bool { runningCall != nil }

    /// The events this connection waits for now (none during a stall: the loop's timer ends it; none while a
    /// call runs and bytes wait unread: the loop hands the call back).
    var wantedEvents: UInt32 {
        if stalled { return 0 }
        if outputBlocked { return EPOLLOUT.rawValue }
        return inputPaused && runningCall != nil ? 0 : EPOLLIN.rawValue
    }

    // MARK: - Staged faults (`TransportFault`; only responses of the fault-injection handler carry one)

    /// Holds all output for `seconds` on the loop's timer; the thread goes on serving other connections.
    private func stall(_ seconds: Double) {
        stalled = true
        // Not idle while it waits: the idle timeout counts from the end of the stall.
        lastActivity = loop.now + seconds
        loop.resume(self, after: seconds)
    }

    /// The loop's timer fired: what was held back goes out, then the connection carries on.
    func stallEnded() {
        guard stalled, phase != .closed else { return }
        stalled = false
        outputBlocked = false
        lastActivity = loop.now
        flush()
        guard phase != .closed else { return }
        if !outputBlocked { process() }
        updateInterest()
    }

    /// Closes with a TCP reset: SO_LINGER with a zero timeout makes close() send RST and drop unsent data.
    private func resetConnection() {
        var option = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(reason: "staged fault: connection reset")
    }

    private func updateInterest() {
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
