internal import CSQLite3
internal import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The writer connection, shared by concurrent write transactions through group commit: transactions that are
/// ready while another group commits queue up; when the connection is free they run one after another, each in a
/// `SAVEPOINT` of one `BEGIN IMMEDIATE` transaction, and the last of them runs one `COMMIT` (one WAL fsync with
/// `synchronous=FULL`) for all. Each member returns only after that `COMMIT` returned; one whose body throws rolls
/// back to its savepoint and gets its own error, while the rest of its group commits.
///
/// Every body runs on its caller's thread (bodies are not Sendable and never cross threads); the queue decides
/// only whose turn it is and who commits. A group is whoever was waiting when the previous commit ended, and those
/// that arrive while its bodies run, up to ``Bounds``: nobody waits for company, so a lone write commits as soon as
/// its body is done. docs/architecture-notes.md ("Group commit") has the reasoning and the measurements.
///
/// `@unchecked Sendable`: `queue` is read and written only with `mutex` held; `owned` (the connection included) only
/// by the one thread that set `queue.connectionBusy`, and ownership passes from thread to thread through `mutex`.
final class GroupCommitWriter: @unchecked Sendable {
    /// How far a group may grow before its last member commits although others wait.
    struct Bounds: Sendable {
        /// Transactions in one group. Each member's body runs (≈ 50–100 µs of CPU for an upload's commit) before
        /// the first member's acknowledgment, so the count bounds what the first one waits beyond its own fsync.
        var members: Int
        /// Bytes bound to the group's writing statements (row values): bounds what one `COMMIT` writes to the WAL
        /// and what the open transaction holds in SQLite's page cache before the fsync.
        var bytes: Int
    }

    /// Counts since open, for metrics and tests.
    struct Counts: Sendable, Equatable {
        /// Transactions that committed (their `COMMIT` returned).
        var commits: UInt64 = 0
        /// `COMMIT`s run: the durability steps, each covering one or more of `commits`.
        var groups: UInt64 = 0
    }

    /// One member's wait for its group's outcome; read and written with `mutex` held.
    private final class Ticket {
        /// nil until the group ends; then `.some(nil)` when it committed, or the error every member gets.
        var outcome: (any Error)??
    }

    /// What threads share: read and written with `mutex` held.
    private struct Queue {
        /// Set while one thread owns the connection: a member running its body, or a commit.
        var connectionBusy = false
        /// Threads waiting for the connection.
        var waiting = 0
        /// Members of the open group whose bodies succeeded, waiting for its `COMMIT`.
        var tickets: [Ticket] = []
        var counts = Counts()
    }

    /// What only the thread that owns the connection reads or writes; ownership passes through `mutex`.
    private struct Owned {
        let connection: Connection
        /// The highest generation assigned so far; the next is `max(now, lastGeneration + 1)`.
        var lastGeneration: Int64
        /// Whether `BEGIN IMMEDIATE` ran and its `COMMIT` did not yet.
        var open = false
        /// Members (successful or not) of the open group, and `connection.boundBytes` at its `BEGIN`.
        var members = 0
        var bytesAtBegin = 0
        /// An error that left the open transaction unusable: the group rolls back and every member gets it.
        var poisoned: (any Error)?
    }

    let bounds: Bounds
    /// Unchecked exclusivity, as in ``BlockingMutex``: `mutex` (for `queue`) and the connection's ownership (for
    /// `owned`) already make every access exclusive.
    @exclusivity(unchecked) private var queue = Queue()
    @exclusivity(unchecked) private var owned: Owned
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Signalled when the connection is free.
    private let connectionFree = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Broadcast when a group's outcome is known.
    private let groupDone = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init(connection: Connection, lastGeneration: Int64, bounds: Bounds) {
        precondition(bounds.members >= 1 && bounds.bytes >= 1, "a commit group must admit one transaction")
        self.bounds = bounds
        owned = Owned(connection: connection, lastGeneration: lastGeneration)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        for condition in [connectionFree, groupDone] {
            condition.initialize(to: pthread_cond_t())
            pthread_cond_init(condition, nil)
        }
    }

    deinit {
        for condition in [connectionFree, groupDone] {
            pthread_cond_destroy(condition)
            condition.deinitialize(count: 1)
            condition.deallocate()
        }
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    private func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    var counts: Counts { locked { queue.counts } }

    /// Threads waiting for the connection now (tests wait for a queue to form before they let a group go).
    var queued: Int { locked { queue.waiting } }

    /// Holds the connection across `body`, outside any transaction: an open group commits first.
    func withConnection<Result>(_ body: (Connection) throws -> Result) rethrows -> Result {
        acquire()
        if owned.open { endGroup() }
        defer { locked { releaseConnection() } }
        return try body(owned.connection)
    }

    /// Runs `body` as one member of a commit group; returns after the group's `COMMIT` returned.
    func transaction<Result>(_ body: (inout SQLiteMetadataRows) throws -> Result) throws -> Result {
        acquire()
        // This thread owns the connection until it hands it on (releaseConnection) or commits.
        let connection = owned.connection
        var outcome: Swift.Result<Result, any Error>
        do {
            if !owned.open {
                try connection.run("BEGIN IMMEDIATE")
                owned.open = true
                owned.members = 0
                owned.bytesAtBegin = connection.boundBytes
            }
            outcome = runMember(connection, body)
        } catch {
            // BEGIN failed: no transaction, nothing of this member's to undo.
            outcome = .failure(error)
        }
        if case .failure(let error) = outcome, owned.open, !connection.inTransaction {
            // SQLite rolled the whole transaction back (SQLITE_FULL, an I/O error): the members before this one
            // lost their work too.
            owned.poisoned = owned.poisoned ?? error
        }
        var ticket: Ticket?
        if owned.open {
            owned.members += 1
            let groupBytes = connection.boundBytes - owned.bytesAtBegin
            let full = owned.members >= bounds.members || groupBytes >= bounds.bytes || owned.poisoned != nil
            let commitNow = locked {
                if case .success = outcome {
                    ticket = Ticket()
                    queue.tickets.append(ticket!)
                }
                return full || queue.waiting == 0
            }
            if commitNow { endGroup() }
        }
        pthread_mutex_lock(mutex)
        releaseConnection()
        if let ticket {
            while ticket.outcome == nil { pthread_cond_wait(groupDone, mutex) }
        }
        pthread_mutex_unlock(mutex)
        if let ticket, let failure = ticket.outcome ?? nil { throw failure }
        return try outcome.get()
    }

    /// Runs one member's body in its own savepoint; on failure, rolls back to it.
    private func runMember<Result>(
        _ connection: Connection, _ body: (inout SQLiteMetadataRows) throws -> Result
    ) -> Swift.Result<Result, any Error> {
        do {
            try connection.run("SAVEPOINT member")
        } catch {
            owned.poisoned = owned.poisoned ?? error
            return .failure(error)
        }
        var rows = SQLiteMetadataRows(connection: connection, lastGeneration: owned.lastGeneration)
        do {
            let result = try body(&rows)
            try connection.run("RELEASE member")
            // Only a member whose work stays moves the counter on (a failed COMMIT later only skips values).
            owned.lastGeneration = rows.lastGeneration
            return .success(result)
        } catch {
            if connection.inTransaction {
                do {
                    try connection.run("ROLLBACK TO member")
                    try connection.run("RELEASE member")
                } catch let rollbackError {
                    owned.poisoned = owned.poisoned ?? rollbackError
                }
            }
            return .failure(error)
        }
    }

    /// Ends the open group: one COMMIT (or, for a poisoned group, ROLLBACK), then hands every member its outcome.
    /// Called by the connection's owner without `mutex`; members added to the group are all in `queue.tickets`.
    private func endGroup() {
        let connection = owned.connection
        var failure: (any Error)? = owned.poisoned
        if let poisoned = failure {
            try? connection.run("ROLLBACK")
            failure = poisoned
        } else {
            do {
                try connection.run("COMMIT")
            } catch {
                // A failed COMMIT may already have rolled back; ROLLBACK then reports "no transaction", fine.
                try? connection.run("ROLLBACK")
                failure = error
            }
        }
        owned.open = false
        owned.poisoned = nil
        locked {
            for member in queue.tickets { member.outcome = .some(failure) }
            if failure == nil {
                queue.counts.commits += UInt64(queue.tickets.count)
                queue.counts.groups += 1
            }
            queue.tickets = []
            pthread_cond_broadcast(groupDone)
        }
    }

    /// Waits for the connection and marks it busy. Called without `mutex`; returns without it.
    private func acquire() {
        locked {
            queue.waiting += 1
            while queue.connectionBusy { pthread_cond_wait(connectionFree, mutex) }
            queue.waiting -= 1
            queue.connectionBusy = true
        }
    }

    /// Called with `mutex` held.
    private func releaseConnection() {
        queue.connectionBusy = false
        pthread_cond_signal(connectionFree)
    }
}
