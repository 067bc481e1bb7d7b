/// A handler's leave for the transport to send an answer again, without calling the handler, to a later request
/// whose head is the same bytes (on a connection as secure), for as long as ``isCurrent`` holds.
///
/// A handler sets it (``HTTPResponse/replay``) only on an answer that follows from the request head and from state
/// whose changes ``isCurrent`` sees: no clock, no credential, no per-connection value. The transport keeps such
/// answers in a small memo per event loop, keyed by the head's bytes; a replay goes through the same request state
/// machine and response framing as any answer, with a fresh `Date` and the id ``replayed()`` gives.
public protocol ReplayPermit: AnyObject, Sendable {
    /// Whether the answer still holds. Called on an event loop before each replay: must not block; a few atomic
    /// loads.
    var isCurrent: Bool { get }
    /// Accounts for one replay as the handler accounts for any answer (metrics, access log) and returns the
    /// request id it is sent with (`X-Request-Id`).
    func replayed() -> String
}
