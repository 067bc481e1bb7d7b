#if os(Linux)
import Glibc
import SiloCore
import SiloHTTP

/// The hand-off to the ``WorkerPool``: one call at a time per connection, and what comes back (on the loop).
extension Connection {
    /// Hands a call that may block to a worker; the connection waits (reads and produces nothing) until
    /// ``callReturned(_:)``.
    func call(_ work: HandlerCall.Work) {
        let call = HandlerCall(work, for: self)
        runningCall = ObjectIdentifier(call)
        loop.submit(call)
    }

    /// A call nobody waits for (aborting a sink, closing a producer), on a worker.
    func callDetached(_ work: HandlerCall.Work) {
        loop.submitDetached(HandlerCall(work, for: nil))
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
            lent = Self.usable(finished.lent)
            sinkLends = lent != nil
            began(disposition)
        case .received(let answer):
            lent = Self.usable(finished.lent)
            // An early answer: what follows of the body is dropped, and may never all come.
            if answer != nil { wakeForBody(1) }
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
            // The head has gone: the client sees the connection cut mid-body, and the cause is logged here.
            state.logger.warning(
                "response body failed after its head; connection closed", metadata: ["silo.error": "\(error)"])
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

    /// A lent buffer with room in it, or nil (an empty one would read as the end of the stream).
    private static func usable(_ buffer: UnsafeMutableRawBufferPointer?) -> UnsafeMutableRawBufferPointer? {
        guard let buffer, buffer.count > 0 else { return nil }
        return buffer
    }

    /// A call returned after the connection closed: its result is released as the machine says (a sink aborted,
    /// an answer dropped); a producer it was producing from is closed now that it is free.
    func releaseAbandoned(_ finished: HandlerCall) {
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
}
#endif
