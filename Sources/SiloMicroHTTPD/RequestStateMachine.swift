import SiloHTTP

/// The life of one request on one connection, without I/O: the access-handler calls (head, body chunks, end of
/// body) and the completion notice go in; what to do comes out. ``RequestContext`` performs the actions.
///
/// Rules it encodes:
/// - Nothing is queued on the first access-handler call (libmicrohttpd 0.9.75 then closes the connection, halving
///   throughput), except to refuse a body the client is waiting to send (`Expect: 100-continue`): queueing then
///   suppresses the `100 Continue` and the body is never sent.
/// - A body sink gets exactly one of `finish()` or `abort()`.
/// - When the answer is known before the body ends, the rest of the body is read and dropped (up to a bound),
///   because 0.9.75 cannot send an answer before the request body has been consumed.
struct RequestStateMachine {
    enum State {
        /// The URI is known; the access handler has not been called yet.
        case awaitingHead
        /// The handler's sink receives the body.
        case readingBody(any RequestBodySink)
        /// The answer is known; remaining body bytes are dropped. `sink` is the one that gave up early (it is
        /// aborted at completion).
        case discardingBody(HTTPResponse, sink: (any RequestBodySink)?, discarded: Int64)
        /// The answer was handed to the transport. `unfinishedSink` still needs `abort()` at completion.
        case responded(unfinishedSink: (any RequestBodySink)?)
        case completed
    }

    /// What to do after the head arrived, a chunk was delivered, or the body ended.
    enum Step {
        /// Return success to the library and wait for the next call.
        case proceed
        /// Queue this response now.
        case queue(HTTPResponse)
        /// Give up on the connection (no answer can be sent).
        case closeConnection
    }

    enum ChunkStep {
        /// Pass the chunk to this sink, then report with ``RequestStateMachine/receiveReturned(_:)``.
        case deliver(any RequestBodySink)
        /// Drop the chunk.
        case discard
        case closeConnection
    }

    enum EndStep {
        /// Call `finish()` on the sink and queue its response.
        case finish(any RequestBodySink)
        case queue(HTTPResponse)
        case proceed
    }

    struct Completion {
        /// A sink that must be aborted (the body never finished).
        var abort: (any RequestBodySink)?
        /// The request had reached the handler, so it counted as in flight.
        var endsInFlightRequest: Bool
    }

    private(set) var state: State = .awaitingHead
    let maxDiscardedBodyBytes: Int64

    init(maxDiscardedBodyBytes: Int64) {
        self.maxDiscardedBodyBytes = maxDiscardedBodyBytes
    }

    var isAwaitingHead: Bool {
        if case .awaitingHead = state { return true }
        return false
    }

    /// The first access-handler call: the handler's `begin` answered with `disposition`.
    mutating func began(_ disposition: RequestDisposition, requestHasBody: Bool, clientAwaitsContinue: Bool) -> Step {
        guard case .awaitingHead = state else { return .closeConnection }
        switch disposition {
        case .readBody(let sink):
            state = .readingBody(sink)
            return .proceed
        case .respond(let response):
            if requestHasBody && clientAwaitsContinue {
                state = .responded(unfinishedSink: nil)
                return .queue(response)
            }
            state = .discardingBody(response, sink: nil, discarded: 0)
            return .proceed
        }
    }

    /// A call carrying `count` body bytes.
    mutating func bodyChunk(count: Int) -> ChunkStep {
        switch state {
        case .readingBody(let sink):
            return .deliver(sink)
        case .discardingBody(let response, let sink, let discarded):
            let total = discarded + Int64(count)
            if total > maxDiscardedBodyBytes {
                state = .responded(unfinishedSink: sink)
                return .closeConnection
            }
            state = .discardingBody(response, sink: sink, discarded: total)
            return .discard
        case .responded:
            return .discard
        case .awaitingHead, .completed:
            return .closeConnection
        }
    }

    /// The sink's answer to the chunk it was given: nil to go on, or a response that ends reading.
    mutating func receiveReturned(_ response: HTTPResponse?) -> Step {
        guard case .readingBody(let sink) = state, var response else { return .proceed }
        // The interface promises the connection is closed after an early answer.
        response.headers.set("Connection", "close")
        state = .discardingBody(response, sink: sink, discarded: 0)
        return .proceed
    }

    /// The call after the last body byte (or, without a body, the second call).
    mutating func bodyEnded() -> EndStep {
        switch state {
        case .readingBody(let sink):
            state = .responded(unfinishedSink: nil)
            return .finish(sink)
        case .discardingBody(let response, let sink, _):
            state = .responded(unfinishedSink: sink)
            return .queue(response)
        case .awaitingHead, .responded, .completed:
            return .proceed
        }
    }

    /// The library is done with the request (answered, client gone, timeout or shutdown).
    mutating func completed() -> Completion {
        let completion: Completion
        switch state {
        case .awaitingHead, .completed:
            completion = Completion(abort: nil, endsInFlightRequest: false)
        case .readingBody(let sink):
            completion = Completion(abort: sink, endsInFlightRequest: true)
        case .discardingBody(_, let sink, _):
            completion = Completion(abort: sink, endsInFlightRequest: true)
        case .responded(let sink):
            completion = Completion(abort: sink, endsInFlightRequest: true)
        }
        state = .completed
        return completion
    }
}
