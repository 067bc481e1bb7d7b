internal import SiloCore

/// Idle reader connections. WAL lets them read beside the writer, so lookups and listings never wait for writes.
final class ReaderPool: Sendable {
    private struct State {
        var idle: [ConfinedConnection] = []
        var closed = false
    }

    /// Taken twice per read, on every request thread: a lock that sleeps rather than spins (see BlockingMutex).
    private let state = BlockingMutex(State())
    private let maxIdle: Int
    private let open: @Sendable () throws -> Connection

    init(maxIdle: Int, open: @escaping @Sendable () throws -> Connection) {
        self.maxIdle = maxIdle
        self.open = open
    }

    /// Runs `body` on an idle connection, opening one if none is idle (the caller's thread count bounds that).
    func read<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        let checkedOut = try state.withLock { state -> ConfinedConnection? in
            guard !state.closed else { throw StorageError(.unavailable, "the metadata store is closed") }
            return state.idle.popLast()
        }
        let slot = try checkedOut ?? ConfinedConnection(open())
        defer {
            state.withLock { state in
                if !state.closed && state.idle.count < maxIdle { state.idle.append(slot) }
            }
        }
        return try body(slot.connection)
    }

    /// Closes idle connections; those in use close when their reads finish and they are dropped.
    func close() {
        let idle = state.withLock { state -> [ConfinedConnection] in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for slot in idle { slot.connection.close() }
    }

    var idleCount: Int { state.withLock { $0.idle.count } }
}

/// A reader connection that crosses threads only through the pool.
///
/// `@unchecked Sendable` is safe because every use of `connection` happens between a pool checkout and checkin,
/// and both go through the pool's lock, which orders them: no two threads ever touch the connection at once.
final class ConfinedConnection: @unchecked Sendable {
    let connection: Connection
    init(_ connection: Connection) { self.connection = connection }
}
