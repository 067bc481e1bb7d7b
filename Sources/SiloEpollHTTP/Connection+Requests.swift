#if os(Linux)
import Glibc
import SiloCore
import SiloHTTP
import Synchronization

/// The request lifecycle the shared ``RequestStateMachine`` drives: heads parsed from `inbound`, `beginInline` or a
/// `begin` on a worker, the body framed (length or chunked) and delivered, and the machine's actions carried out.
extension Connection {
    /// Serves what is buffered: heads are parsed and handled, body bytes delivered, responses queued, in order.
    /// Stops when more bytes are needed or output must drain first.
    func process() {
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
                switch RequestHeadParser.headEnd(bytes, lead: 0, resumeAt: headScanResume) {
                case .incomplete(let resumeAt):
                    headScanResume = resumeAt
                    if partialHeadSince == nil { partialHeadSince = loop.now }
                    if bytes.count >= state.configuration.maxRequestHeadBytes {
                        reject(431, "request head too large")
                    }
                    flush()
                    return
                case .found(let headEnd):
                    headScanResume = 0
                    partialHeadSince = nil
                    let head = UnsafeRawBufferPointer(rebasing: bytes[..<headEnd])
                    let probe = loop.replays.probe(head, isSecure: io.isSecure)
                    if let replay = probe.entry {
                        start += headEnd
                        begin(replaying: replay)
                        break
                    }
                    switch RequestHeadParser.parseLines(
                        bytes, from: 0, end: headEnd, peer: peer, local: local, isSecure: io.isSecure)
                    {
                    case .incomplete:
                        // parseLines is given a whole head: it never asks for more.
                        reject(400, "incomplete request head")
                    case .invalid(let status, let reason):
                        reject(status, reason)
                    case .complete(var request, let consumed):
                        start += consumed
                        if probe.seen { request.head.wantsReplayPermit = true }
                        begin(request, head: UnsafeRawBufferPointer(rebasing: bytes[..<consumed]), probe: probe)
                    }
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

    /// `head`: the request's bytes in `inbound`, and `probe` what the replay memo knows of them.
    func begin(_ request: ParsedRequest, head: UnsafeRawBufferPointer, probe: ReplayMemo.Probe) {
        guard
            headArrived(
                request.framing, keepAlive: request.keepAlive, isHead: request.isHeadMethod,
                isHTTP10: request.isHTTP10, awaitsContinue: request.awaitsContinue)
        else { return }
        let work: HandlerCall.Work
        switch inline?.beginInline(request.head) ?? .declined {
        case .answered(let answer):
            if case .respond(let response) = answer, response.replay != nil {
                loop.replays.keep(response, for: request, head: head, isSecure: io.isSecure, probe: probe)
            }
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

    /// A head the memo holds an answer for: the same steps as an answer from ``begin(_:head:)``, without the
    /// handler.
    private func begin(replaying entry: ReplayMemo.Entry) {
        guard
            headArrived(
                .none, keepAlive: entry.keepAlive, isHead: entry.isHeadMethod, isHTTP10: entry.isHTTP10,
                awaitsContinue: false)
        else { return }
        let answer = entry.answer(id: entry.permit.replayed())
        loop.refreshClock()
        lastActivity = loop.now
        began(.respond(answer))
    }

    /// A new exchange starts; false when the machine refuses it (the connection is closed then).
    private func headArrived(
        _ framing: RequestFraming, keepAlive: Bool, isHead: Bool, isHTTP10: Bool, awaitsContinue: Bool
    ) -> Bool {
        exchange = Exchange(keepAlive: keepAlive, isHeadMethod: isHead, isHTTP10: isHTTP10)
        self.framing = framing
        guard case .callBegin = machine.headArrived(hasBody: framing != .none, awaitsContinue: awaitsContinue) else {
            close(reason: "request out of order")
            return false
        }
        state.inFlight.add(1, ordering: .relaxed)
        return true
    }

    func began(_ disposition: RequestDisposition) {
        switch machine.began(disposition) {
        case .readBody(let sendContinue):
            if sendContinue { out.append("HTTP/1.1 100 Continue\r\n\r\n") }
            startBody()
        case .proceed:
            // The answer is known; the body, if any, is read and dropped first.
            startBody()
        case let action:
            carryOut(action)
        }
    }

    /// Does what the machine asked for after a head, a chunk, the end of the body or a handler call.
    func carryOut(_ action: RequestStateMachine.Action) {
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
                // A body answered before it was read (413, a refused 100-continue) is dropped while lingering, up to
                // the bound that applies to a body dropped before its answer.
                if framing != .none { lingerLimit = max(lingerLimit, state.configuration.maxDiscardedBodyBytes) }
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
    func consumeBody(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
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
            // A lent buffer is the sink's again from its next call on (the chunk came from there, or none was read).
            assert(lentFilled == 0, "bytes read into a lent buffer were passed over")
            lent = nil
            call(.receive(sink, chunk))
        case .closeConnection:
            state.logger.debug("request body too long to drop, closing")
            close(reason: "body too long to drop")
        default:
            break
        }
    }

    func bodyEnded() {
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
}
#endif
