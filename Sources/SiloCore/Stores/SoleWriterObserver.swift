#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Told by a store that several processes may share (PostgreSQL) when this process becomes, stays or stops being its
/// only writer, so that a cache in front of it is exact exactly while that holds (``CachingMetadataStore``).
///
/// Deadlines are ``MonotonicClock`` nanoseconds: the store has proved it is the only writer until then, and must
/// prove it again before (a heartbeat) or the cache stops answering by itself. One thread calls these, in order.
public protocol SoleWriterObserver: AnyObject, Sendable {
    /// This process alone writes the store until `deadline`. Anything remembered from before may be stale: forget it.
    func becameSoleWriter(until deadline: UInt64)
    /// Still the only writer, now until `deadline`.
    func extendSoleWriter(until deadline: UInt64)
    /// Another process may write from now on: stop answering from memory before returning.
    func stoppedBeingSoleWriter()
}

/// `CLOCK_MONOTONIC` in nanoseconds: for deadlines that must not move with the wall clock.
public enum MonotonicClock {
    @inline(__always)
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
