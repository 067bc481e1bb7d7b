import Foundation
import SiloCore
import SiloTesting
import Synchronization
import Testing

@_spi(Testing) @testable import SiloPostgres

/// What only the PostgreSQL store has: migrations shared by nodes, several store instances ("nodes") on one
/// database, and a bounded connection pool. The conformance suite covers the MetadataStore semantics.
@Suite(.enabled(if: PostgresTestSchema.url != nil, "SILO_TEST_POSTGRES_URL is not set: no PostgreSQL server"))
struct PostgresMetadataStoreTests {
    let bucket = bucketName()

    // MARK: Migrations

    @Test func migrationsRunOnceAndReopeningFindsTheSchemaCurrent() throws {
        let schema = try PostgresTestSchema()
        let first = try schema.open()
        #expect(first.schemaVersionAtOpen == 0)
        _ = try first.insertUploaded(draft("kept"), conditions: .none, at: Timestamp(microseconds: 5))
        first.close()
        let second = try schema.open()
        #expect(second.schemaVersionAtOpen == Int64(Migrations.currentVersion))
        #expect(try second.scalar("SELECT count(*)::text FROM silo_migrations") == String(Migrations.currentVersion))
        #expect(try second.object(bucket, objectName("kept"), generation: nil) != nil, "reopening keeps the data")
    }

    @Test func nodesStartingAtOnceMigrateOneAfterTheOther() throws {
        let schema = try PostgresTestSchema()
        let versions = Mutex<[Int64]>([])
        let failures = Mutex<[String]>([])
        onThreads(6) { _ in
            do {
                let store = try schema.open(poolSize: 1)
                versions.withLock { $0.append(store.schemaVersionAtOpen) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        // Exactly one node found an empty database; the others waited on the advisory lock and found it migrated.
        let current = Int64(Migrations.currentVersion)
        #expect(versions.withLock { $0.sorted() } == [0, current, current, current, current, current])
        let store = try schema.open()
        #expect(try store.scalar("SELECT count(*)::text FROM silo_migrations") == String(current))
        #expect(
            try store.scalar("SELECT count(*)::text FROM counters") == "17", "16 generation stripes, writer_lease_epoch"
        )
    }

    /// Writes of different names move different counter rows (one row for all serialized every node's writes), and
    /// usage, kept in rows per stripe of connections, still adds up; one name's generations still only grow.
    @Test func generationsAndUsageAreStripedAcrossRows() throws {
        let schema = try PostgresTestSchema()
        let store = try schema.open(poolSize: 4)
        let start = try #require(
            try store.scalar("SELECT max(value)::text FROM counters WHERE name LIKE 'generation/%'"))
        var generations: [Int64] = []
        for round in 0..<3 {
            for index in 0..<64 {
                let stored = try store.insertUploaded(
                    draft("spread/\(index)", size: 10), conditions: .none,
                    at: Timestamp(microseconds: Int64(round)))
                if index == 7 { generations.append(stored.stored.generation) }
            }
        }
        _ = try store.deleteObject(bucket, objectName("spread/7"), generation: nil, conditions: .none)
        generations.append(
            try store.insertUploaded(draft("spread/7", size: 10), conditions: .none, at: Timestamp(microseconds: 1))
                .stored.generation)
        #expect(generations == generations.sorted() && Set(generations).count == generations.count, "\(generations)")
        let moved = try store.scalar(
            "SELECT count(*)::text FROM counters WHERE name LIKE 'generation/%' AND value > \(start)")
        #expect(Int(moved ?? "0") ?? 0 >= 8, "64 names moved \(moved ?? "?") of 16 rows")
        #expect(try store.bucketUsage()[bucket]?.objects == 64)
        #expect(try store.bucketUsage()[bucket]?.bytes == 640)
    }

    /// Sessions written before step 10 kept the starter's raw Authorization header as `principal`: the step drops it,
    /// fails the active sessions that held one, and leaves the rest.
    @Test func sessionCredentialsAreDroppedByTheMigration() throws {
        let schema = try PostgresTestSchema()
        let store = try schema.open()
        func session(_ name: String) -> UploadSession {
            UploadSession(
                id: RandomID.sessionID(), bucket: bucket, name: objectName(name), fields: ObjectFields(),
                declaredSize: nil, blobID: .random(), created: Timestamp(microseconds: 1))
        }
        let active = session("active")
        let finished = session("finished")
        let anonymous = session("anonymous")
        for one in [active, finished, anonymous] { try store.insertSession(one) }
        _ = try store.updateSession(id: finished.id) { $0.state = .finalized }
        _ = try store.textRows(
            "UPDATE sessions SET record = (record::jsonb || '{\"principal\":\"Bearer legacy-admin-key\"}')::text "
                + "WHERE id IN ('\(active.id)', '\(finished.id)') RETURNING ''")
        _ = try store.textRows("DELETE FROM silo_migrations WHERE version >= 10 RETURNING ''")
        store.close()

        let migrated = try schema.open()
        #expect(migrated.schemaVersionAtOpen == 9)
        #expect(
            try migrated.scalar("SELECT count(*)::text FROM sessions WHERE record LIKE '%legacy-admin-key%'") == "0")
        let failed = try #require(try migrated.session(id: active.id))
        #expect(failed.state == .failed && failed.failureStatus == 410)
        #expect(failed.failureMessage == UploadSession.credentialDropped.message)
        #expect(try migrated.scalar("SELECT state FROM sessions WHERE id = '\(active.id)'") == "failed")
        #expect(try migrated.session(id: finished.id)?.state == .finalized)
        #expect(try migrated.session(id: anonymous.id)?.state == .active, "a session without a credential goes on")
    }

    @Test func aDatabaseFromANewerSiloIsRefused() throws {
        let schema = try PostgresTestSchema()
        let store = try schema.open()
        _ = try store.textRows("INSERT INTO silo_migrations (version, applied_at) VALUES (99, now()) RETURNING ''")
        store.close()
        let refused = #expect(throws: StorageError.self) { _ = try schema.open() }
        #expect(refused?.code == .unavailable)
        #expect(refused?.message.contains("99") == true, "\(String(describing: refused))")
    }

    // MARK: Two nodes on one database

    @Test(arguments: [Int64?.none, 0])
    func concurrentPreconditionedWritesFromTwoNodesExactlyOneWins(_ existing: Int64?) throws {
        let schema = try PostgresTestSchema()
        let nodes = [try schema.open(poolSize: 4), try schema.open(poolSize: 4)]
        for round in 0..<5 {
            let name = "contended-\(round)"
            // Either the name exists (match its generation) or it does not (ifGenerationMatch=0).
            let expected: Int64 =
                existing == nil
                ? 0
                : try nodes[0].insertUploaded(draft(name), conditions: .none, at: Timestamp(microseconds: 1)).stored
                    .generation
            let winners = Mutex<[Int64]>([])
            let failures = Mutex<[String]>([])
            onThreads(8) { thread in
                do {
                    let (stored, _) = try nodes[thread % 2].insertUploaded(
                        draft(name), conditions: Preconditions(ifGenerationMatch: expected),
                        at: Timestamp(microseconds: 2))
                    winners.withLock { $0.append(stored.generation) }
                } catch let error as StorageError where error.code == .preconditionFailed {
                    // The expected outcome for all but one writer.
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let won = winners.withLock { $0 }
            #expect(won.count == 1, "round \(round): \(won)")
            let live = try nodes[1].object(bucket, objectName(name), generation: nil)
            #expect(live?.generation == won.first && won.first.map { $0 > expected } == true)
        }
    }

    @Test func generationsStrictlyIncreaseAcrossNodesWhateverTheirClocks() throws {
        let schema = try PostgresTestSchema()
        let nodeA = try schema.open()
        let nodeB = try schema.open()
        // Node B's clock is an hour behind node A's: its generations still follow A's.
        let timeA = Timestamp(microseconds: 1_700_000_000_000_000)
        let timeB = Timestamp(microseconds: timeA.microseconds - 3_600_000_000)
        var last: [String: Int64] = [:]
        for index in 0..<10 {
            let (node, time) = index.isMultiple(of: 2) ? (nodeA, timeA) : (nodeB, timeB)
            let name = "seq-\(index % 3)"
            let generation = try node.insertUploaded(draft(name), conditions: .none, at: time).stored.generation
            #expect(generation > last[name, default: 0], "insert \(index)")
            last[name] = generation
        }
        // Concurrent inserts of four names from both nodes: each name's generations all distinct, each thread's
        // in increasing order per name, and after what the first round gave that name.
        let results = Mutex<[Int: [(String, Int64)]]>([:])
        let failures = Mutex<[String]>([])
        onThreads(8) { thread in
            var generations: [(String, Int64)] = []
            for index in 0..<20 {
                do {
                    let node = thread.isMultiple(of: 2) ? nodeA : nodeB
                    let name = "seq-\(index % 4)"
                    generations.append(
                        (name, try node.insertUploaded(draft(name), conditions: .none, at: timeB).stored.generation))
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            results.withLock { $0[thread] = generations }
        }
        #expect(failures.withLock { $0 } == [])
        let all = results.withLock { $0 }
        for name in (0..<4).map({ "seq-\($0)" }) {
            for generations in all.values {
                let mine = generations.filter { $0.0 == name }.map(\.1)
                #expect(mine == mine.sorted(), "\(name)")
            }
            let every = all.values.flatMap { $0.filter { $0.0 == name }.map(\.1) }
            #expect(every.count == 40 && Set(every).count == 40, "\(name)")
            #expect(every.allSatisfy { $0 > last[name, default: 0] }, "\(name)")
        }
    }

    @Test func aWriteOnOneNodeIsReadOnTheOther() throws {
        let schema = try PostgresTestSchema()
        let nodeA = try schema.open()
        let nodeB = try schema.open()
        let (stored, _) = try nodeA.insertUploaded(draft("shared"), conditions: .none, at: Timestamp(microseconds: 9))
        #expect(try nodeB.object(bucket, objectName("shared"), generation: nil) == stored)
        let session = UploadSession(
            id: "session-1", bucket: bucket, name: objectName("upload"), fields: ObjectFields(), declaredSize: 10,
            blobID: .random(), created: Timestamp(microseconds: 10))
        try nodeA.insertSession(session)
        let advanced = try nodeB.updateSession(id: session.id) { $0.received = 5 }
        #expect(try nodeA.session(id: session.id) == advanced)
    }

    // MARK: Connection pool

    @Test func aFullPoolMakesCallersWaitAndThenFailsWithUnavailable() throws {
        let schema = try PostgresTestSchema()
        var configuration = schema.configuration
        configuration.checkoutTimeout = .milliseconds(300)
        let store = try schema.open(configuration, poolSize: 2)
        // Both connections held: a third caller waits out the timeout, then fails.
        let refused = try store.withPooledConnection { first in
            try store.withPooledConnection { second in
                #expect(first != second)
                #expect(store.poolStatistics.open == 2)
                let started = ContinuousClock.now
                let error = #expect(throws: StorageError.self) { _ = try store.buckets() }
                #expect(ContinuousClock.now - started >= .milliseconds(250))
                return error
            }
        }
        #expect(refused?.code == .unavailable)
        // A caller that waits gets the connection as soon as it comes back.
        let released = Mutex<ContinuousClock.Instant?>(nil)
        let finished = Mutex<ContinuousClock.Instant?>(nil)
        var patient = schema.configuration
        patient.checkoutTimeout = .seconds(10)
        let patientStore = try schema.open(patient, poolSize: 1)
        let holding = DispatchSemaphore(value: 0)
        onThreads(2) { thread in
            if thread == 0 {
                try? patientStore.withPooledConnection { _ in
                    holding.signal()
                    Thread.sleep(forTimeInterval: 0.3)
                    released.withLock { $0 = .now }
                }
            } else {
                holding.wait()
                if (try? patientStore.buckets()) != nil { finished.withLock { $0 = .now } }
            }
        }
        // The waiter's call could only finish after the holder let go of the one connection.
        let (releasedAt, finishedAt) = (released.withLock { $0 }, finished.withLock { $0 })
        #expect(releasedAt != nil && finishedAt != nil)
        if let releasedAt, let finishedAt { #expect(finishedAt > releasedAt) }
    }

    @Test func manyThreadsShareABoundedPool() throws {
        let schema = try PostgresTestSchema()
        let store = try schema.open(poolSize: 3)
        let peak = Mutex(0)
        let failures = Mutex<[String]>([])
        onThreads(10) { thread in
            for index in 0..<15 {
                do {
                    _ = try store.insertUploaded(
                        draft("p\(thread)-\(index)"), conditions: .none, at: Timestamp(microseconds: 3))
                    _ = try store.listObjects(bucket, prefix: "p\(thread)", startAfter: nil, limit: 5)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
                let open = store.poolStatistics.open
                peak.withLock { $0 = max($0, open) }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(peak.withLock { $0 } <= 3)
        #expect(store.poolStatistics.open <= 3 && store.poolStatistics.capacity == 3)
        #expect(try store.listObjects(bucket, prefix: "p", startAfter: nil, limit: 1000).count == 150)
    }

    @Test func aConnectionKilledByTheServerIsReplaced() throws {
        let schema = try PostgresTestSchema()
        let store = try schema.open(poolSize: 1)
        _ = try store.ensureBucket(bucket)
        let pid = try store.withPooledConnection { $0 }
        // Another node (here: another store) terminates the idle pooled connection's server process.
        let admin = try schema.open(poolSize: 1)
        #expect(try admin.scalar("SELECT pg_terminate_backend(\(pid))::text") == "true")
        // The next call finds the connection broken, opens a new one and succeeds.
        let (stored, _) = try store.insertUploaded(draft("after"), conditions: .none, at: Timestamp(microseconds: 4))
        #expect(try store.object(bucket, objectName("after"), generation: nil) == stored)
        #expect(try store.withPooledConnection { $0 } != pid)
    }

    // MARK: Prepared statements

    /// A lookup outside a transaction is parsed and planned once per connection, then run by name; a statement that
    /// disappears from the session (`DEALLOCATE`, as a pooler in front of the server may do) is run unnamed once
    /// and prepared again.
    @Test func readsArePreparedOncePerConnectionAndSurviveDeallocation() throws {
        let schema = try PostgresTestSchema()
        let store = try schema.open(poolSize: 1)
        let (stored, _) = try store.insertUploaded(draft("hot"), conditions: .none, at: Timestamp(microseconds: 3))
        let usage = """
            SELECT count(*)::text, coalesce(sum(generic_plans + custom_plans), 0)::text FROM pg_prepared_statements
            WHERE statement LIKE '%FROM objects WHERE bucket = $1 AND name = $2 AND live'
            """
        for _ in 0..<3 { #expect(try store.object(bucket, objectName("hot"), generation: nil) == stored) }
        #expect(try store.textRows(usage) == [["1", "3"]])
        _ = try store.textRows("DEALLOCATE ALL")
        #expect(try store.object(bucket, objectName("hot"), generation: nil) == stored)
        #expect(try store.textRows(usage) == [["0", "0"]])
        #expect(try store.object(bucket, objectName("hot"), generation: nil) == stored)
        #expect(try store.textRows(usage) == [["1", "1"]])
        // Writes run in transactions, unnamed: nothing there changes.
        _ = try store.insertUploaded(draft("hot"), conditions: .none, at: Timestamp(microseconds: 4))
        #expect(try store.object(bucket, objectName("hot"), generation: nil)?.generation != stored.generation)
    }

    // MARK: URLs and errors

    @Test func urlsAreValidatedWithoutEchoingThem() throws {
        #expect(PostgresMetadataStore.handles("postgres://h/db") && PostgresMetadataStore.handles("postgresql://h/db"))
        #expect(!PostgresMetadataStore.handles("sqlite:/tmp/x") && !PostgresMetadataStore.handles("/data"))
        let bad = #expect(throws: StorageError.self) {
            _ = try PostgresMetadataStore(url: "postgres://user:s3cret@127.0.0.1:5432/db?nonsense=1")
        }
        #expect(bad?.code == .invalidArgument)
        #expect(bad?.message.contains("s3cret") == false)
        let badPool = #expect(throws: StorageError.self) {
            _ = try PostgresMetadataStore(url: "postgres://127.0.0.1/db?pool_size=zero")
        }
        #expect(badPool?.code == .invalidArgument)
        // Nothing listens on port 1: connection failures are `.unavailable`.
        let down = #expect(throws: StorageError.self) {
            _ = try PostgresMetadataStore(url: "postgres://user:s3cret@127.0.0.1:1/db?connect_timeout=2")
        }
        #expect(down?.code == .unavailable)
        #expect(down?.message.contains("s3cret") == false)
    }

    @Test func poolSizeInTheURLOverridesTheArgument() throws {
        let schema = try PostgresTestSchema()
        let separator = schema.url.contains("?") ? "&" : "?"
        let store = try PostgresMetadataStore(
            url: schema.url + separator + "pool_size=2", poolSize: 9, configuration: schema.configuration)
        #expect(store.poolStatistics.capacity == 2)
    }
}
