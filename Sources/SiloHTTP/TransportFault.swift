/// A failure a transport stages on purpose, for clients to test their retry handling against (storage-testbench's
/// retry test instructions; docs/test-faults.md). Only the fault-injection handler sets one; transports that cannot
/// stage a fault deliver the response normally.
public enum TransportFault: Sendable, Equatable {
    /// Nothing is sent: the connection is closed with a TCP reset (`SO_LINGER` 0).
    case resetConnection
    /// The head and the first `afterBytes` bytes of the body are sent, then the connection is closed.
    case breakBody(afterBytes: Int64)
    /// The head and the first `afterBytes` bytes of the body are sent, then nothing for `seconds`, then the rest.
    /// The connection waits on its event loop's timer: no thread sleeps, other connections are served meanwhile.
    case stallBody(afterBytes: Int64, seconds: Double)
    /// Nothing is sent for `seconds` (not even the head), then the whole response (an upload that stalls: the
    /// request was read, the answer is late).
    case stallResponse(seconds: Double)
}
