/// The server side of one HTTP exchange, independent of the transport.
///
/// The transport calls `begin` when the head has arrived. The handler either answers at once or returns a sink
/// that receives the body in pieces, in order, on one thread at a time; `finish` produces the answer.
///
/// Threads: `begin`, the sink's calls and a streamed body's `produce` may block (store transactions, fsync, network
/// stores, hashing), so transports never call them on a thread that serves other connections' sockets — they hand
/// them to a bounded pool of workers. An ``InlineAnswerer`` is the exception that keeps cheap answers cheap: the
/// transport asks it first, on the socket's own thread, and it answers there only when it can without waiting on
/// anything (a cache hit); otherwise it declines, and `begin` — or what the attempt left to do — runs on a worker.
public protocol HTTPHandler: Sendable {
    func begin(_ head: HTTPRequestHead) -> RequestDisposition
    /// A new answerer for one socket thread, or nil when every request goes to a worker. A transport makes one for
    /// each thread that serves sockets and calls it only from there.
    func makeInlineAnswerer() -> (any InlineAnswerer)?
}

/// Answers on one socket thread what needs no blocking call, and declines the rest to a worker (see
/// ``InlineDisposition``). One per thread, used by that thread alone (not Sendable), so what an attempt records
/// lives in the answerer itself: no lock and no thread-local slot.
public protocol InlineAnswerer: AnyObject {
    /// Must not block, and must have no side effects unless it answers.
    func beginInline(_ head: HTTPRequestHead) -> InlineDisposition
}

extension HTTPHandler {
    /// By default every request goes to a worker.
    public func makeInlineAnswerer() -> (any InlineAnswerer)? { nil }

    /// An inline attempt, then whatever it declined, on the calling thread: for transports whose request threads may
    /// block (the in-process harness). The answerer is made for this one request, since any thread may call this.
    public func beginOnThisThread(_ head: HTTPRequestHead) -> RequestDisposition {
        guard let answerer = makeInlineAnswerer() else { return begin(head) }
        switch answerer.beginInline(head) {
        case .answered(let disposition): return disposition
        case .declined: return begin(head)
        case .deferred(let rest): return rest.begin()
        }
    }
}

/// What ``InlineAnswerer/beginInline(_:)`` decided.
public enum InlineDisposition {
    /// Answered on the socket's thread.
    case answered(RequestDisposition)
    /// Not answerable there: ``HTTPHandler/begin(_:)`` runs on a worker.
    case declined
    /// Not answerable there: `rest.begin()` runs on a worker instead of ``HTTPHandler/begin(_:)``, carrying on from
    /// what the attempt established (the route, the verified credential), so that nothing is done twice.
    case deferred(any DeferredBegin)
}

/// The rest of a request's `begin` after a declined inline attempt. Made on the socket's thread, run once on a
/// worker (the transport hands it over as it hands over any call), or never if the client goes away first — so it
/// holds nothing that needs releasing.
public protocol DeferredBegin: AnyObject {
    func begin() -> RequestDisposition
}

public enum RequestDisposition {
    case respond(HTTPResponse)
    case readBody(any RequestBodySink)
}

public protocol RequestBodySink: AnyObject {
    /// The next piece of the body. Returning a response ends the exchange: the sink gets no more calls, and the
    /// transport sends the response with `Connection: close`. (HTTP/1.1 clients read no answer before their body is
    /// sent, so the transport reads and drops the rest of the body first, up to a bound, past which it closes the
    /// connection without an answer.)
    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse?
    /// The body is complete; produce the answer.
    func finish() -> HTTPResponse
    /// The client went away (or the transport gave up) before `finish`; release resources, make nothing visible.
    func abort()
    /// Memory the transport may read the next body bytes into, so that they reach ``receive(_:)`` where the sink
    /// wants them, without a copy and in pieces as large as this buffer: the next chunk then starts at its start and
    /// is no longer than it. Nil leaves the transport to use its own buffers. Asked right after `begin` returned
    /// the sink and after each `receive` that returned nil, on the same thread; the memory stays the sink's and must
    /// stay valid until its next call. A transport may ignore it.
    ///
    /// No default: a sink that wraps another must pass its buffer on, and one that forgot to (a default of nil)
    /// once cost every upload a copy and a worker hand-off per 128 KiB (bench/results/upload.md).
    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer?
}

/// A transport that serves an ``HTTPHandler``.
public protocol HTTPServer: AnyObject {
    /// The bound port (useful after binding port 0).
    var port: Int { get }
    /// Stops accepting, waits up to `timeout` seconds for in-flight requests to finish, then closes everything.
    func shutdown(drainTimeout: Double)
}
