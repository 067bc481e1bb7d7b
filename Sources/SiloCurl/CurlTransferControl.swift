import Synchronization

/// Stops a running transfer from any thread. libcurl checks it in every read, write and progress callback; the
/// progress callback runs at least once a second even when no bytes move, so an abort always takes effect.
public final class CurlTransferControl: Sendable {
    private let aborted = Atomic(false)

    public init() {}

    public func abort() { aborted.store(true, ordering: .releasing) }

    public var isAborted: Bool { aborted.load(ordering: .acquiring) }
}
