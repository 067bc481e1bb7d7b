/// The life of one request on a connection, without I/O and without threads: the transport reports what happened
/// (the head arrived, a handler call returned, body bytes came, the body ended, the connection went away) and the
/// machine says what to do next. The transport drives it and carries out its actions (the epoll transport runs
/// handler calls on workers); keeping the rules here, apart from I/O, is what lets them be tested alone.
///
/// Rules it encodes:
/// - A handler call (`begin`, a sink's `receive`/`finish`) may be running while the transport waits; nothing else is
///   asked of the handler meanwhile, so a sink's calls come one at a time, in order.
/// - A body sink gets exactly one of `finish()` or `abort()`, even when the connection goes away while one of its
///   calls runs: the abort is then due when that call returns (``Action/abort(_:)``).
/// - An answer known before the body ends is sent after the rest of the body is read and dropped, up to a bound
///   past which the connection is closed without an answer: HTTP/1.1 clients read nothing before they have sent
///   their body.
/// - Exceptions that answer at once: a refused body the client is waiting to send (`Expect: 100-continue`, it will
///   not send it; the connection then closes, since a body sent anyway could not be told from a next request), a
///   body refused from the head for its size (413: waiting for it is what the answer is meant to spare; the
///   connection closes after it, lingering), and a staged connection reset (``TransportFault/resetConnection``).
/// - A sink that answers early gives up the body: its answer carries `Connection: close`, and it is aborted when
///   the body has been dropped.
package struct RequestStateMachine {
    package enum State {
        /// No request yet, or the previous one was answered (keep-alive).
        case idle
        /// The handler's `begin` is running.
        case beginning(hasBody: Bool, awaitsContinue: Bool)
        /// The sink waits for the next piece of the body.
        case readingBody(any RequestBodySink)
        /// A piece of the body is with the sink (`receive` is running).
        case receiving(any RequestBodySink)
        /// The answer is known; the rest of the body is dropped. `sink` gave up early (aborted at the end).
        case discardingBody(HTTPResponse, sink: (any RequestBodySink)?, discarded: Int64)
        /// The sink's `finish` is running.
        case finishing
        /// The answer went to the transport. `unfinishedSink` is aborted at completion (a body too long to drop).
        case responded(unfinishedSink: (any RequestBodySink)?)
        /// The connection went away while a handler call ran; its result is dropped when it returns, and `sink`
        /// (the one receiving, if any) is aborted then.
        case abandoned(sink: (any RequestBodySink)?)
    }

    /// How the connection goes on after an answer.
    package enum Closing: Equatable, Sendable {
        /// As the request and response say (keep-alive unless one of them closes).
        case asNegotiated
        /// Closed after the answer, and what the client still sends is read and dropped for a moment first, so the
        /// close does not reset the connection before the client has read the answer.
        case lingering
    }

    package enum Action {
        /// Wait for the next event (more body bytes, the end of the body).
        case proceed
        /// Call `begin` (or take `beginInline`'s answer) and report with ``began(_:)``.
        case callBegin
        /// The body follows; `sendContinue` when the client waits for `100 Continue` before sending it.
        case readBody(sendContinue: Bool)
        /// Pass the chunk to this sink and report with ``receiveReturned(_:)``.
        case deliver(any RequestBodySink)
        /// Drop the chunk.
        case discard
        /// Call the sink's `finish` and report with ``finishReturned(_:)``.
        case finish(any RequestBodySink)
        /// Send this answer; abort `abort` (a sink that gave up) once the answer is on its way.
        case respond(HTTPResponse, Closing, abort: (any RequestBodySink)?)
        /// The connection cannot go on (no answer can be sent).
        case closeConnection
        /// The connection is gone: abort this sink.
        case abort(any RequestBodySink)
        /// The connection is gone: release this answer without sending it.
        case drop(HTTPResponse)
    }

    package struct Completion {
        /// A sink that must be aborted now (the body never finished and no call of it is running).
        package var abort: (any RequestBodySink)?
        /// The request had reached the handler and was not answered in full, so it counted as in flight.
        package var endsRequest: Bool
        /// A handler call is still running; its result is dropped (``Action/abort(_:)`` or ``Action/drop(_:)``).
        package var callRunning: Bool
    }

    package private(set) var state: State = .idle
    package let maxDiscardedBodyBytes: Int64

    package init(maxDiscardedBodyBytes: Int64) {
        self.maxDiscardedBodyBytes = maxDiscardedBodyBytes
    }

    /// No request is under way (before the first head, or after an answer).
    package var isIdle: Bool {
        switch state {
        case .idle: true
        case .responded(let sink): sink == nil
        default: false
        }
    }

    /// A handler call is running: the transport reads nothing for this connection meanwhile.
    package var callRunning: Bool {
        switch state {
        case .beginning, .receiving, .finishing: true
        default: false
        }
    }

    /// A head arrived; `hasBody` when it announces one (a length above 0 or chunked framing).
    package mutating func headArrived(hasBody: Bool, awaitsContinue: Bool) -> Action {
        guard isIdle else { return .closeConnection }
        state = .beginning(hasBody: hasBody, awaitsContinue: awaitsContinue)
        return .callBegin
    }

    /// `begin` (or `beginInline`) returned.
    package mutating func began(_ disposition: RequestDisposition) -> Action {
        switch state {
        case .abandoned:
            state = .idle
            switch disposition {
            case .readBody(let sink): return .abort(sink)
            case .respond(let response): return .drop(response)
            }
        case .beginning(let hasBody, let awaitsContinue):
            switch disposition {
            case .readBody(let sink):
                state = .readingBody(sink)
                return .readBody(sendContinue: hasBody && awaitsContinue)
            case .respond(let response) where response.transportFault == .resetConnection:
                state = .responded(unfinishedSink: nil)
                return .respond(response, .asNegotiated, abort: nil)
            case .respond(let response) where hasBody && (awaitsContinue || response.status == 413):
                // A body refused for its size is not waited for (RFC 9110 §15.5.14: the server may close the
                // connection): a head declaring a terabyte is answered now, and what the client goes on sending is
                // dropped while the connection lingers.
                state = .responded(unfinishedSink: nil)
                return .respond(response, .lingering, abort: nil)
            case .respond(let response):
                state = .discardingBody(response, sink: nil, discarded: 0)
                return .proceed
            }
        default:
            return .closeConnection
        }
    }

    /// `count` body bytes arrived (a call with no bytes is not a chunk).
    package mutating func bodyChunk(count: Int) -> Action {
        switch state {
        case .readingBody(let sink):
            state = .receiving(sink)
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
        case .idle, .beginning, .receiving, .finishing, .abandoned:
            return .closeConnection
        }
    }

    /// The sink's `receive` returned: nil to go on, or an answer that ends reading.
    package mutating func receiveReturned(_ answer: HTTPResponse?) -> Action {
        switch state {
        case .abandoned(let sink):
            state = .idle
            return sink.map { .abort($0) } ?? .closeConnection
        case .receiving(let sink):
            guard var answer else {
                state = .readingBody(sink)
                return .proceed
            }
            // The interface promises the connection is closed after an early answer.
            answer.headers.set("Connection", "close")
            state = .discardingBody(answer, sink: sink, discarded: 0)
            return .proceed
        default:
            return .closeConnection
        }
    }

    /// The body is complete (or there was none).
    package mutating func bodyEnded() -> Action {
        switch state {
        case .readingBody(let sink):
            state = .finishing
            return .finish(sink)
        case .discardingBody(let response, let sink, _):
            state = .responded(unfinishedSink: nil)
            return .respond(response, .asNegotiated, abort: sink)
        case .idle, .responded:
            return .proceed
        case .beginning, .receiving, .finishing, .abandoned:
            return .closeConnection
        }
    }

    /// The sink's `finish` returned its answer.
    package mutating func finishReturned(_ response: HTTPResponse) -> Action {
        switch state {
        case .abandoned:
            state = .idle
            return .drop(response)
        case .finishing:
            state = .responded(unfinishedSink: nil)
            return .respond(response, .asNegotiated, abort: nil)
        default:
            return .drop(response)
        }
    }

    /// The body cannot be read on (malformed framing): the transport answers 400 and closes, lingering.
    package mutating func bodyFailed() -> Action {
        let sink: (any RequestBodySink)?
        switch state {
        case .readingBody(let reading): sink = reading
        case .discardingBody(_, let gaveUp, _): sink = gaveUp
        case .idle, .responded: sink = nil
        case .beginning, .receiving, .finishing, .abandoned: return .closeConnection
        }
        state = .responded(unfinishedSink: nil)
        return sink.map { .abort($0) } ?? .proceed
    }

    /// The request is over for the transport: its answer was sent, the client went away, a timeout, shutdown.
    package mutating func completed() -> Completion {
        let completion: Completion
        switch state {
        case .idle:
            completion = Completion(abort: nil, endsRequest: false, callRunning: false)
        case .readingBody(let sink):
            completion = Completion(abort: sink, endsRequest: true, callRunning: false)
        case .discardingBody(_, let sink, _):
            completion = Completion(abort: sink, endsRequest: true, callRunning: false)
        case .responded(let sink):
            completion = Completion(abort: sink, endsRequest: true, callRunning: false)
        case .receiving(let sink):
            state = .abandoned(sink: sink)
            return Completion(abort: nil, endsRequest: true, callRunning: true)
        case .beginning, .finishing:
            state = .abandoned(sink: nil)
            return Completion(abort: nil, endsRequest: true, callRunning: true)
        case .abandoned:
            return Completion(abort: nil, endsRequest: false, callRunning: true)
        }
        state = .idle
        return completion
    }
}

@available(*, unavailable) extension RequestStateMachine: Sendable {}
