/// The server side of one HTTP exchange, independent of the transport.
///
/// The transport calls `begin` when the head has arrived. The handler either answers at once or returns a sink
/// that receives the body in pieces, in order, on one transport thread at a time; `finish` produces the answer.
/// Handlers may block (disk, SQLite): transports run them on a pool sized for that.
public protocol HTTPHandler: Sendable {
    func begin(_ head: HTTPRequestHead) -> RequestDisposition
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
}

/// A transport that serves an ``HTTPHandler``.
public protocol HTTPServer: AnyObject {
    /// The bound port (useful after binding port 0).
    var port: Int { get }
    /// Stops accepting, waits up to `timeout` seconds for in-flight requests to finish, then closes everything.
    func shutdown(drainTimeout: Double)
}
