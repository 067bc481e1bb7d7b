internal import CLibPQ
import Dispatch
import Glibc
internal import SiloCore
import Synchronization

/// Which node, if any, is the only writer of a PostgreSQL deployment, so that it alone may answer reads from memory.
///
/// One advisory lock per deployment (per schema) decides it, held by a connection of its own:
/// - **exclusive** while this node runs alone: its cache answers (``SoleWriterObserver``), for `lease` after each
///   heartbeat that came back (one every `heartbeat`); a cache that stops hearing them stops answering by itself;
/// - **shared** by every node once a second one runs: nobody caches, every read is a round trip.
///
/// Every write transaction of a node that does not own the lock first takes it shared for that transaction
/// (``admission()``), so no other node's write can commit while an owner caches. The owner's own transactions skip
/// the lock but check a fencing epoch (the `writer_lease_epoch` counter, moved on by each new owner before it
/// caches, which waits for the transactions that checked the old one): a node that lost the lock without noticing
/// yet cannot commit behind a new owner's cache. A writer that finds it held
/// exclusively asks the owner to hand over (NOTIFY on ``channel``); the owner stops caching, then changes its lock
/// to shared, and the writer's transaction goes on. A node that starts does the same before it serves. An owner
/// that does not hand over within `handoverTimeout` (longer than `lease`, so its cache has stopped answering) has
/// its lock connection terminated. A node left alone takes the lock exclusively again (tried every
/// `upgradeInterval`) and starts from an empty cache.
///
/// Nodes must reach PostgreSQL directly or through a session-pooling proxy: LISTEN and session advisory locks do
/// not survive transaction pooling.
final class WriterLease: Sendable {
    typealias Timing = PostgresMetadataStore.WriterLeaseTiming

    static let channel = "silo_writer_lease"
    /// The lock's first key, 'SILO'; the second is ``lockObject``. Two int4 keys never meet the name locks' one
    /// int8 key (PostgreSQL tells the two forms apart).
    static let lockClass: Int64 = 0x5349_4C4F
    /// An FNV-1a hash of the schema with bit 30 set (never the migrations' lock, ('SILO', 1)), so deployments in
    /// one database do not share a lease.
    let lockObject: Int64
    private let connect: @Sendable () throws -> Connection
    private let timing: Timing
    private let logger: Logger
    /// Until when this node owns the lock (``MonotonicClock`` nanoseconds; 0: it does not).
    private let ownedUntil = Atomic<UInt64>(0)
    /// The fencing epoch this node took when it became the owner.
    private let ownerEpoch = Atomic<Int64>(0)
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)
    private let observer = Mutex(WeakObserver())
    /// Written to stop the lease thread's wait at once; read end first.
    private let wakeUp: (read: Int32, write: Int32)
    /// Signalled by the lease thread once when it has the lock (or has failed to), and once when it has stopped.
    private let settled = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let startFailure = Mutex<StorageError?>(nil)

    init(namespace: String, timing: Timing, logger: Logger, connect: @escaping @Sendable () throws -> Connection) throws
    {
        lockObject = Self.lockObject(namespace: namespace)
        sharedAdmission = "SELECT pg_try_advisory_xact_lock_shared(\(Self.lockClass), \(lockObject))"
        waitingAdmission =
            "SET LOCAL lock_timeout = '15s'; SELECT pg_advisory_xact_lock_shared(\(Self.lockClass), \(lockObject))"
        handoverRequest = "SELECT pg_notify('\(Self.channel)', '\(lockObject)')"
        self.timing = timing
        self.logger = logger
        self.connect = connect
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw StorageError(.internalError, "cannot make a pipe for the writer lease (errno \(errno))")
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        wakeUp = (fds[0], fds[1])
    }

    static func lockObject(namespace: String) -> Int64 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in namespace.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return Int64(hash & 0x7fff_ffff | 0x4000_0000)
    }

    deinit {
        close(wakeUp.read)
        close(wakeUp.write)
    }

    /// Whether this node owns the lock now.
    var isOwner: Bool {
        let until = ownedUntil.load(ordering: .acquiring)
        return until != 0 && MonotonicClock.nanoseconds() < until
    }

    // MARK: Write admission (any thread)

    /// What a write transaction runs right after BEGIN, in the same round trip, and the one-row, one-column answer
    /// that admits it; any other answer means another node owns the lock (ask it to hand over, then
    /// ``waitingAdmission``). The owner checks its fencing epoch (row lock `FOR SHARE`, so a new owner's move of
    /// it waits for this transaction); any other node takes the lock shared for the transaction.
    func admission() -> (sql: String, admitted: String) {
        if isOwner {
            return (
                "SELECT value FROM counters WHERE name = 'writer_lease_epoch' FOR SHARE",
                String(ownerEpoch.load(ordering: .acquiring))
            )
        }
        return (sharedAdmission, "t")
    }

    /// The non-owner's admission, made once (it runs in every write transaction).
    private let sharedAdmission: String
    /// After a refused ``admission()`` and a ``handoverRequest``: waits for the owner to hand over.
    let waitingAdmission: String
    /// Asks the owner to hand over; outside a transaction, so it is sent at once.
    let handoverRequest: String

    // MARK: Starting and stopping

    /// Takes the lock (exclusive if no other node runs, else shared after a hand-over) and keeps it on a thread of
    /// its own, telling `observer` when this node becomes, stays and stops being the only writer.
    func start(_ observer: any SoleWriterObserver) throws {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.observer.withLock { $0.value = observer }
        let argument = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, writerLeaseThreadMain, argument)
        guard created == 0 else {
            Unmanaged<WriterLease>.fromOpaque(argument).release()
            running.store(false, ordering: .releasing)
            throw StorageError(.internalError, "cannot start the writer lease thread (error \(created))")
        }
        pthread_detach(thread)
        settled.wait()
        if let failure = startFailure.withLock({ $0 }) { throw failure }
    }

    /// Stops caching and releases the lock (closing its connection); waits up to 5 s for the thread.
    func stop() {
        guard running.load(ordering: .acquiring), !stopping.exchange(true, ordering: .acquiringAndReleasing) else {
            return
        }
        var byte: UInt8 = 1
        _ = write(wakeUp.write, &byte, 1)
        _ = finished.wait(timeout: .now() + 5)
    }

    // MARK: The lease thread

    private enum Role { case none, owner, sharer }

    fileprivate func run() {
        var connection: Connection?
        var role = Role.none
        var hasSettled = false
        // Lost connections before the first role is settled: retried a few times (another starting node may have
        // stopped this one's lock connection while it waited to move the epoch), unlike a failure to connect at all.
        var connected = false
        var startRetries = 0
        var backoff = Duration.milliseconds(100)
        defer {
            if role == .owner { stopOwning() }
            connection?.close()
            if !hasSettled { settled.signal() }
            finished.signal()
        }
        while !stopping.load(ordering: .acquiring) {
            do {
                if connection == nil {
                    let opened = try connect()
                    try opened.execute("LISTEN \(Self.channel)")
                    connection = opened
                    connected = true
                }
                guard let connection else { continue }
                switch role {
                case .none:
                    role = try acquire(connection)
                    if !hasSettled {
                        hasSettled = true
                        settled.signal()
                    }
                case .owner: role = try own(connection)
                case .sharer: role = try share(connection)
                }
                backoff = .milliseconds(100)
            } catch {
                if role == .owner { stopOwning() }
                role = .none
                connection?.close()
                connection = nil
                let failure =
                    error as? StorageError ?? StorageError(.unavailable, "the writer lease failed", cause: error)
                if !hasSettled {
                    startRetries += 1
                    let lostConnection = (failure.cause as? PostgresError)?.isConnectionFailure == true
                    guard connected, lostConnection, startRetries <= 5 else {
                        startFailure.withLock { $0 = failure }
                        return
                    }
                }
                if !stopping.load(ordering: .acquiring) {
                    logger.warning("writer lease lost, reads go to PostgreSQL until it is back: \(failure.message)")
                }
                _ = waitReadable(nil, for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// Exclusive if nobody else holds the lock; else shared, after asking an owner to hand over. An owner that
    /// has not handed over after `handoverTimeout` has its lock connection terminated (again after each further
    /// `handoverTimeout`: it may have come back); after four, this node gives up.
    private func acquire(_ connection: Connection) throws -> Role {
        let handover = Self.nanoseconds(timing.handoverTimeout)
        // The owner being waited for, and since when: a new owner (the old one back on a new connection) gets
        // its own `handoverTimeout` to see the request.
        var owner: Int64?
        var waitingSince = MonotonicClock.nanoseconds()
        var terminations = 0
        while !stopping.load(ordering: .acquiring) {
            if try tryExclusive(connection) { return .owner }
            try connection.execute(handoverRequest)
            do {
                try connection.execute(
                    "SET lock_timeout = '1s'; SELECT pg_advisory_lock_shared(\(Self.lockClass), \(lockObject))")
                try connection.execute("SET lock_timeout = 0")
                logger.info("another Silo node uses this PostgreSQL database: every read goes to PostgreSQL")
                return .sharer
            } catch let error as StorageError where (error.cause as? PostgresError)?.sqlState == "55P03" {
                try connection.execute("SET lock_timeout = 0")
                let holder = try connection.query(
                    """
                    SELECT pid::bigint FROM pg_locks
                    WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND granted
                        AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 2
                    """, [.int64(Self.lockClass), .int64(lockObject)]
                ).first { try $0.int64(0) }
                if holder != owner {
                    owner = holder
                    waitingSince = MonotonicClock.nanoseconds()
                }
                guard let holder, MonotonicClock.nanoseconds() - waitingSince > handover else { continue }
                guard terminations < 4 else {
                    throw StorageError(
                        .unavailable,
                        "another Silo node holds this database's writer lease and neither hands it over nor can be stopped"
                    )
                }
                // Its cache stopped answering `lease` after its last heartbeat, long before now.
                let stopped = try connection.query("SELECT pg_terminate_backend($1::integer)", [.int64(holder)])
                    .first { try $0.bool(0) }
                logger.warning(
                    "the Silo node holding the writer lease did not hand it over; its lock connection stopped: \(stopped == true)"
                )
                terminations += 1
                owner = nil
            }
        }
        return .none
    }

    private func tryExclusive(_ connection: Connection) throws -> Bool {
        let sent = MonotonicClock.nanoseconds()
        let taken =
            try connection.query(
                "SELECT pg_try_advisory_lock($1::integer, $2::integer)", [.int64(Self.lockClass), .int64(lockObject)]
            ).first { try $0.bool(0) } ?? false
        guard taken else { return false }
        // Waits for the transactions of an owner that lost the lock without noticing (they hold the row FOR SHARE);
        // those that start later see the new epoch and refuse to commit as owner.
        let epoch = try connection.query(
            "UPDATE counters SET value = value + 1 WHERE name = 'writer_lease_epoch' RETURNING value"
        ).first { try $0.int64(0) }
        guard let epoch else { throw StorageError(.internalError, "the writer_lease_epoch counter is missing") }
        ownerEpoch.store(epoch, ordering: .releasing)
        let until = sent + Self.nanoseconds(timing.lease)
        // The cache is emptied before it answers again; the transactions skip admission from now on.
        observer.withLock { $0.value }?.becameSoleWriter(until: until)
        ownedUntil.store(until, ordering: .releasing)
        logger.info("this node is the only writer of its PostgreSQL database: reads of live objects are cached")
        return true
    }

    private func stopOwning() {
        ownedUntil.store(0, ordering: .releasing)
        observer.withLock { $0.value }?.stoppedBeingSoleWriter()
    }

    /// One step as the owner: a heartbeat when due, a hand-over when asked.
    private func own(_ connection: Connection) throws -> Role {
        if waitReadable(connection, for: timing.heartbeat) {
            guard connection.consumeInput() else {
                throw StorageError(.unavailable, "the writer lease connection broke")
            }
        }
        let sent = MonotonicClock.nanoseconds()
        try connection.execute("SELECT 1")
        if handoverAsked(connection) {
            stopOwning()
            // Shared first, then the exclusive hold released: never a moment without the lock.
            try connection.execute(
                """
                SELECT pg_advisory_lock_shared(\(Self.lockClass), \(lockObject));
                SELECT pg_advisory_unlock(\(Self.lockClass), \(lockObject))
                """)
            logger.info("another Silo node joined this PostgreSQL database: every read goes to PostgreSQL")
            return .sharer
        }
        // The same session answered, so the lock was held all along: nobody else wrote.
        let until = sent + Self.nanoseconds(timing.lease)
        ownedUntil.store(until, ordering: .releasing)
        observer.withLock { $0.value }?.extendSoleWriter(until: until)
        return .owner
    }

    /// One step as a sharer: every `upgradeInterval`, take the lock exclusively if this node is now alone.
    private func share(_ connection: Connection) throws -> Role {
        if waitReadable(connection, for: timing.upgradeInterval) {
            guard connection.consumeInput() else {
                throw StorageError(.unavailable, "the writer lease connection broke")
            }
            _ = connection.takeNotifications()
            return .sharer
        }
        guard !stopping.load(ordering: .acquiring), try tryExclusive(connection) else { return .sharer }
        try connection.execute("SELECT pg_advisory_unlock_shared(\(Self.lockClass), \(lockObject))")
        return .owner
    }

    /// Whether a notification asks the owner to hand over: one on ``channel`` for this lock from any session but
    /// this one (other nodes, and this node's own writers if the lease ran out under them).
    private func handoverAsked(_ connection: Connection) -> Bool {
        let own = connection.backendPID
        return connection.takeNotifications().contains { notification in
            notification.channel == Self.channel && notification.payload == String(lockObject)
                && notification.senderPID != own
        }
    }

    /// Waits up to `duration` for the connection's socket (or, with nil, only the stop pipe); true if the socket
    /// has data.
    private func waitReadable(_ connection: Connection?, for duration: Duration) -> Bool {
        var fds = [
            pollfd(fd: wakeUp.read, events: Int16(POLLIN), revents: 0),
            pollfd(fd: connection?.socket ?? -1, events: Int16(POLLIN), revents: 0),
        ]
        let milliseconds = Int32(clamping: Self.nanoseconds(duration) / 1_000_000)
        let ready = poll(&fds, nfds_t(fds.count), milliseconds)
        return ready > 0 && fds[1].revents != 0
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}

extension PostgresMetadataStore {
    /// The writer lease's clock (``startWriterLease(notifying:)``). `handoverTimeout` must be longer than `lease`:
    /// an owner is stopped only once its cache has stopped answering by itself.
    public struct WriterLeaseTiming: Sendable {
        /// How often the owner proves it still holds the lock.
        public var heartbeat: Duration = .seconds(1)
        /// How long after a heartbeat was sent its answer lets the owner's cache answer.
        public var lease: Duration = .seconds(3)
        /// How often a sharer tries to become the owner (it is alone once the other nodes have gone).
        public var upgradeInterval: Duration = .seconds(5)
        /// How long a starting node waits for an owner to hand over before terminating its lock connection.
        public var handoverTimeout: Duration = .seconds(10)

        public init() {}
    }
}

/// The lease's observer, held weakly: the cache in front of the store owns the store, which owns the lease.
private struct WeakObserver {
    weak var value: (any SoleWriterObserver)?
}

private func writerLeaseThreadMain(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let argument else { return nil }
    Unmanaged<WriterLease>.fromOpaque(argument).takeRetainedValue().run()
    return nil
}
