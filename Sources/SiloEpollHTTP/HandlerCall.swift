#if os(Linux)
import SiloHTTP

/// One handler call that may block, carried from an event loop to a worker and back with its result.
///
/// `@unchecked Sendable`: it holds non-Sendable things (the connection, a sink, a producer, the memory a chunk lies
/// in), but exactly one thread owns it at a time — the loop until it is queued, one worker while it runs, the loop
/// again once it is taken from the mailbox — and each hand-off goes through a lock (the pool's queue, the loop's
/// mailbox) that orders the two threads' accesses. The worker touches only `work`, `result` and `lent`; `connection` is
/// used on its loop only (the worker merely keeps it alive, so the memory a chunk lies in stays allocated).
final class HandlerCall: @unchecked Sendable {
    enum Work {
        case begin(any HTTPHandler, HTTPRequestHead)
        /// What a declined `beginInline` left to do, instead of `begin`.
        case resume(any DeferredBegin)
        /// The chunk lies in the connection's buffers, which it leaves alone until the call returns.
        case receive(any RequestBodySink, UnsafeRawBufferPointer)
        case finish(any RequestBodySink)
        case abort(any RequestBodySink)
        /// Fills `buffer` (the connection's stream buffer) with the next block of a streamed body.
        case produce(any ResponseBodyProducer, UnsafeMutableRawBufferPointer)
        /// Releases an answer nobody will send.
        case drop(HTTPResponse)
        /// Closes a producer whose connection is gone, after the `produce` it was in returned.
        case closeProducer(any ResponseBodyProducer)
    }

    enum Result {
        case pending
        case began(RequestDisposition)
        case received(HTTPResponse?)
        case finished(HTTPResponse)
        case produced(Int)
        case produceFailed(any Error)
        case done
    }

    /// The connection the result goes back to (nil for a call nobody waits for).
    let connection: Connection?
    let work: Work
    private(set) var result: Result = .pending
    /// The sink's buffer for the next body bytes (``RequestBodySink/nextChunkBuffer()``), asked on the worker after
    /// a `begin` that returned a sink and after a `receive` that returned no answer.
    private(set) var lent: UnsafeMutableRawBufferPointer?

    init(_ work: Work, for connection: Connection?) {
        self.work = work
        self.connection = connection
    }

    /// Makes the call; on a worker.
    func run() {
        switch work {
        case .begin(let handler, let head):
            result = .began(Self.began(handler.begin(head), lending: &lent))
        case .resume(let rest):
            result = .began(Self.began(rest.begin(), lending: &lent))
        case .receive(let sink, let chunk):
            let answer = sink.receive(chunk)
            if answer == nil { lent = sink.nextChunkBuffer() }
            result = .received(answer)
        case .finish(let sink):
            result = .finished(sink.finish())
        case .abort(let sink):
            sink.abort()
            result = .done
        case .produce(let producer, let buffer):
            do {
                result = .produced(try producer.produce(into: buffer))
            } catch {
                result = .produceFailed(error)
            }
        case .drop(let response):
            Self.release(response)
            result = .done
        case .closeProducer(let producer):
            producer.close()
            result = .done
        }
    }

    /// A `begin`'s disposition; a sink's buffer for the first body bytes is asked for here, on the worker.
    private static func began(_ disposition: RequestDisposition, lending lent: inout UnsafeMutableRawBufferPointer?)
        -> RequestDisposition
    {
        if case .readBody(let sink) = disposition { lent = sink.nextChunkBuffer() }
        return disposition
    }

    /// The loop exited before it took this result: every connection is closed, so what the call produced is
    /// released as a closed connection would (a sink aborted, an answer dropped, a producer closed). On a worker,
    /// which owns the call now; the loop no longer touches anything the call holds.
    func releaseUnclaimed() {
        switch (work, result) {
        case (.begin, .began(.readBody(let sink))), (.resume, .began(.readBody(let sink))): sink.abort()
        case (.begin, .began(.respond(let response))), (.resume, .began(.respond(let response))):
            Self.release(response)
        case (.receive(let sink, _), _): sink.abort()
        case (.finish, .finished(let response)): Self.release(response)
        case (.produce(let producer, _), _): producer.close()
        default: break
        }
    }

    /// The loop exited before this call could be queued: it never ran, so only what it holds is released (a sink
    /// aborted, a producer closed); a `begin` that never ran has nothing to undo, nor has a deferred one.
    func releaseUnrun() {
        switch work {
        case .receive(let sink, _), .finish(let sink), .abort(let sink): sink.abort()
        case .produce(let producer, _), .closeProducer(let producer): producer.close()
        case .drop(let response): Self.release(response)
        case .begin, .resume: break
        }
    }

    /// A response that will not be sent: its producer is closed (a file descriptor closes with its owner).
    static func release(_ response: HTTPResponse) {
        if case .stream(_, let producer) = response.body { producer.close() }
    }
}
#endif
