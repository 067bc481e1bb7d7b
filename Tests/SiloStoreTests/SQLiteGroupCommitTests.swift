import Foundation
import SiloCore
import Testing

@_spi(Testing) @testable import SiloSQLite

#if canImport(Glibc)
import SiloTesting
#endif

/// Group commit in the SQLite store: write transactions that are ready together share one `COMMIT` (one WAL fsync),
/// each returns only after it, and one that fails rolls back alone.
///
/// Each test holds a first transaction inside its body until the others are queued for the writer
/// (`queuedWriters`), then lets it go: the group is then known exactly, with no timing involved.
@Suite struct SQLiteGroupCommitTests {
    /// What happened, in order: the SQL the writer ran (trace) and the acknowledgments (a transaction returned).
    final class Log: Sendable {
        private let lines = BlockingMutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
        func clear() { lines.withLock { $0 = [] } }
    }

    private func makeStore(_ directory: TempDirectory, log: Log, maxGroup: Int = 64) throws -> SQLiteMetadataStore {
        var configuration = SQLiteMetadataStore.Configuration()
        configuration.trace = { sql in
            if ["BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"].contains(sql) { log.append(sql) }
        }
        configuration.maxGroupTransactions = maxGroup
        return try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite", configuration: configuration)
    }

    /// Runs `first` on a thread of its own and holds it inside its transaction's body; starts `others` each on a
    /// thread of its own, waits until all of them wait for the writer, then lets `first` finish; returns when every
    /// thread has. Each closure is one write (it runs one transaction).
    private func runQueuedBehindOne(
        _ store: SQLiteMetadataStore, first: @escaping @Sendable (_ hold: () -> Void) -> Void,
        others: [@Sendable () -> Void]
    ) throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            first {
                entered.signal()
                release.wait()
            }
            finished.signal()
        }.start()
        entered.wait()
        for other in others {
            Thread {
                other()
                finished.signal()
            }.start()
        }
        // A wait for the queue to form, not a timing assertion: it ends as soon as every thread is queued.
        var spins = 0
        while store.queuedWriters < others.count {
            spins += 1
            try #require(spins < 600_000, "the writers never queued up")
            usleep(100)
        }
        release.signal()
        for _ in 0...others.count { finished.wait() }
    }

    @Test func concurrentCommitsShareOneCommitAndAreAcknowledgedAfterIt() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let log = Log()
        let store = try makeStore(directory, log: log)
        _ = try store.ensureBucket(bucketName())
        let count = 12
        // Each upload's blob registered beforehand, as an upload does before its first byte: the group is then the
        // uploads' commits.
        let drafts = (0..<count).map { draft("n\($0)") }
        for draft in drafts { try store.registerPendingBlob(draft.blobID, at: .now()) }
        let before = store.commitCounts
        log.clear()
        let failures = BlockingMutex<[String]>([])
        @Sendable func upload(_ index: Int) {
            do {
                _ = try store.insertObject(
                    drafts[index], conditions: .init(ifGenerationMatch: 0), at: .now(), finalizing: nil)
                log.append("ack \(index)")
            } catch {
                failures.withLock { $0.append("n\(index): \(error)") }
            }
        }
        try runQueuedBehindOne(
            store,
            first: { hold in
                do {
                    _ = try store.transaction { rows in
                        hold()
                        try rows.addGarbage(.random(), at: .now())
                    }
                    log.append("ack first")
                } catch {
                    failures.withLock { $0.append("first: \(error)") }
                }
            },
            others: (0..<count).map { index in { upload(index) } })

        #expect(failures.withLock { $0 }.isEmpty)
        let after = store.commitCounts
        #expect(after.commits - before.commits == UInt64(count + 1))
        #expect(after.groups - before.groups == 1, "one COMMIT for the whole group")
        let lines = log.all
        let commits = lines.indices.filter { lines[$0] == "COMMIT" }
        try #require(commits.count == 1, "\(lines)")
        let acknowledgments = lines.indices.filter { lines[$0].hasPrefix("ack ") }
        #expect(acknowledgments.count == count + 1)
        #expect(acknowledgments.allSatisfy { $0 > commits[0] }, "every acknowledgment after the COMMIT: \(lines)")
        // Committed for other connections too: the reader pool sees every row.
        for index in 0..<count {
            #expect(try store.object(bucketName(), objectName("n\(index)"), generation: nil) != nil)
        }
    }

    @Test func aFailingMemberRollsBackAloneAndGetsItsOwnError() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let log = Log()
        let store = try makeStore(directory, log: log)
        _ = try store.ensureBucket(bucketName())
        let doomed = BlobID.random()
        let kept = BlobID.random()
        let drafts = [draft("kept-1"), draft("kept-2")]
        for draft in drafts { try store.registerPendingBlob(draft.blobID, at: .now()) }
        let before = store.commitCounts
        log.clear()
        let outcomes = BlockingMutex<[String: String]>([:])
        let others: [@Sendable () -> Void] = [
            {
                do {
                    _ = try store.insertObject(
                        drafts[0], conditions: .init(ifGenerationMatch: 0), at: .now(), finalizing: nil)
                    outcomes.withLock { $0["kept-1"] = "ok" }
                } catch { outcomes.withLock { $0["kept-1"] = "\(error)" } }
            },
            {
                // Writes, then fails: its write must go, and only its.
                do {
                    try store.transaction { rows in
                        try rows.addGarbage(doomed, at: .now())
                        throw StorageError(.conflict, "this member fails after writing")
                    }
                    outcomes.withLock { $0["failing"] = "committed" }
                } catch let error as StorageError {
                    outcomes.withLock { $0["failing"] = "\(error.code): \(error.message)" }
                } catch { outcomes.withLock { $0["failing"] = "\(error)" } }
            },
            {
                do {
                    _ = try store.insertObject(
                        drafts[1], conditions: .init(ifGenerationMatch: 0), at: .now(), finalizing: nil)
                    outcomes.withLock { $0["kept-2"] = "ok" }
                } catch { outcomes.withLock { $0["kept-2"] = "\(error)" } }
            },
        ]
        try runQueuedBehindOne(
            store,
            first: { hold in
                do {
                    try store.transaction { rows in
                        try rows.addGarbage(kept, at: .now())
                        hold()
                    }
                    outcomes.withLock { $0["kept-0"] = "ok" }
                } catch { outcomes.withLock { $0["kept-0"] = "\(error)" } }
            },
            others: others)

        let seen = outcomes.withLock { $0 }
        #expect(seen["failing"] == "conflict: this member fails after writing")
        for name in ["kept-0", "kept-1", "kept-2"] {
            #expect(seen[name] == "ok", "\(name): \(seen[name] ?? "no outcome")")
        }
        for name in ["kept-1", "kept-2"] {
            #expect(try store.object(bucketName(), objectName(name), generation: nil) != nil)
        }
        #expect(try store.scalar("SELECT count(*) FROM blob_garbage WHERE blob_id = '\(kept.rawValue)'") == "1")
        #expect(try store.scalar("SELECT count(*) FROM blob_garbage WHERE blob_id = '\(doomed.rawValue)'") == "0")
        let after = store.commitCounts
        #expect(after.commits - before.commits == 3)
        #expect(after.groups - before.groups == 1)
        #expect(log.all.filter { $0 == "COMMIT" }.count == 1)
        #expect(store.busyStatementCount() == 0)
    }

    /// A group stops at `maxGroupTransactions`: 1 held + 9 queued with a bound of 4 make groups of 4, 4 and 2.
    @Test func aGroupIsBoundedByItsTransactionCount() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let log = Log()
        let store = try makeStore(directory, log: log, maxGroup: 4)
        let before = store.commitCounts
        log.clear()
        try runQueuedBehindOne(
            store,
            first: { hold in
                _ = try? store.transaction { rows in
                    hold()
                    try rows.addGarbage(.random(), at: .now())
                }
            },
            others: (0..<9).map { _ in { _ = try? store.registerPendingBlob(.random(), at: .now()) } })
        let after = store.commitCounts
        #expect(after.commits - before.commits == 10)
        #expect(after.groups - before.groups == 3)
        #expect(try store.scalar("SELECT count(*) FROM blob_garbage") == "10")
    }
}
