import Dispatch
internal import SiloCore
import Synchronization

/// At most `capacity` connections, opened on demand and kept for reuse.
///
/// A caller that finds every connection in use waits (up to `checkoutTimeout`) for one to come back, so a burst
/// of requests queues here instead of opening more connections than the server allows. Connections that come back
/// broken or inside a transaction are dropped (closed by their deinit), and the next checkout opens a fresh one.
final class ConnectionPool: Sendable {
    private struct State {
        var idle: [PooledConnection] = []
        /// Connections open right now, idle or checked out.
        var open = 0
        var closed = false
    }

    let capacity: Int
    private let checkoutTimeout: Duration
    /// Taken twice per request: a lock that sleeps rather than spins (see ``BlockingMutex``).
    private let state = BlockingMutex(State())
    /// One permit per connection; a checkout holds one until checkin.
    private let permits: DispatchSemaphore
    private let connect: @Sendable () throws -> Connection

    init(capacity: Int, checkoutTimeout: Duration, connect: @escaping @Sendable () throws -> Connection) {
        precondition(capacity > 0, "a connection pool needs at least one connection")
        self.capacity = capacity
        self.checkoutTimeout = checkoutTimeout
        self.permits = DispatchSemaphore(value: capacity)
        self.connect = connect
    }

    /// Runs `body` on a connection of its own, waiting for one if all are in use.
    func withConnection<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        let (seconds, attoseconds) = checkoutTimeout.components
        let nanoseconds =
            Int(min(seconds, Int64(Int.max / 1_000_000_000))) * 1_000_000_000
            + Int(attoseconds / 1_000_000_000)
        guard permits.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else {
            throw StorageError(
                .unavailable, "all \(capacity) PostgreSQL connections stayed busy for \(checkoutTimeout)")
        }
        defer { permits.signal() }
        let slot = try checkout()
        defer { checkin(slot) }
        return try body(slot.connection)
    }

    private func checkout() throws -> PooledConnection {
        let reused = try state.withLock { state -> PooledConnection? in
            guard !state.closed else { throw StorageError(.unavailable, "the metadata store is closed") }
            if let slot = state.idle.popLast() { return slot }
            state.open += 1
            return nil
        }
        if let reused { return reused }
        do {
            return PooledConnection(try connect())
        } catch {
            state.withLock { $0.open -= 1 }
            throw error
        }
    }

    private func checkin(_ slot: PooledConnection) {
        let keep = state.withLock { state in
            let keep = !state.closed && slot.connection.isReusable
            if keep { state.idle.append(slot) } else { state.open -= 1 }
            return keep
        }
        if !keep { slot.connection.close() }
    }

    /// Closes the idle connections (after a connection failure they are most likely broken too: the server
    /// restarted or the network dropped); connections in use are checked again when they come back.
    func discardIdle() {
        let idle = state.withLock { state -> [PooledConnection] in
            defer {
                state.open -= state.idle.count
                state.idle = []
            }
            return state.idle
        }
        for slot in idle { slot.connection.close() }
    }

    /// Closes idle connections and refuses new checkouts; those in use close when they come back.
    func close() {
        state.withLock { $0.closed = true }
        discardIdle()
    }

    /// Connections open right now, idle or in use.
    var openCount: Int { state.withLock { $0.open } }
    var idleCount: Int { state.withLock { $0.idle.count } }
}

/// A connection that crosses threads only through the pool.
///
/// `@unchecked Sendable` is safe because a `PooledConnection` is used by exactly one thread between its checkout
/// and its checkin, and both go through the pool's Mutex, which orders them: no two threads touch the connection
/// at once.
final class PooledConnection: @unchecked Sendable {
    let connection: Connection
    init(_ connection: Connection) { self.connection = connection }
}
