import Foundation
import SiloCore
import SiloTesting
import Synchronization
import Testing

@_spi(Testing) @testable import SiloPostgres

/// The writer lease (WriterLease): a node alone on a database caches reads; a second node, or any writer, makes it
/// hand over first; the last node left caches again from an empty cache; an owner that cannot hand over is stopped;
/// and a write under an epoch that has moved on never commits as the owner's.
@Suite(.enabled(if: PostgresTestSchema.url != nil, "SILO_TEST_POSTGRES_URL is not set: no PostgreSQL server"))
struct PostgresWriterLeaseTests {
    let bucket = bucketName()

    /// A Silo node as `silo serve` makes one: the store, the cache in front of it, the lease started.
    struct Node {
        let store: PostgresMetadataStore
        let cache: CachingMetadataStore

        init(_ schema: PostgresTestSchema, timing: PostgresMetadataStore.WriterLeaseTiming = fast) throws {
            var configuration = schema.configuration
            configuration.writerLeaseTiming = timing
            store = try schema.open(configuration)
            cache = CachingMetadataStore(store, soleWriter: false)
            try store.startWriterLease(notifying: cache)
        }

        func close() { store.close() }

        /// Reads `name` and says whether the read was answered from memory.
        func readIsCached(_ bucket: BucketName, _ name: String) throws -> Bool {
            let hits = cache.lookups.hits
            _ = try cache.object(bucket, objectName(name), generation: nil)
            return cache.lookups.hits > hits
        }
    }

    static var fast: PostgresMetadataStore.WriterLeaseTiming {
        var timing = PostgresMetadataStore.WriterLeaseTiming()
        timing.heartbeat = .milliseconds(100)
        timing.lease = .milliseconds(400)
        timing.upgradeInterval = .milliseconds(300)
        timing.handoverTimeout = .seconds(1)
        return timing
    }

    @Test func aNodeAloneIsTheOnlyWriterAndAnswersReadsFromMemory() throws {
        let schema = try PostgresTestSchema()
        let node = try Node(schema)
        defer { node.close() }
        #expect(node.store.isSoleWriter)
        _ = try node.cache.insertUploaded(draft("alone"), conditions: .none, at: Timestamp(microseconds: 1))
        _ = try node.cache.object(bucket, objectName("alone"), generation: nil)
        #expect(try node.readIsCached(bucket, "alone"))
        #expect(node.cache.cachedObject(bucket, objectName("alone")) != nil, "the event loops' lookup answers too")
    }

    @Test func aSecondNodeMakesTheFirstHandOverAndEveryReadIsFresh() throws {
        let schema = try PostgresTestSchema()
        let a = try Node(schema, timing: Self.slowToUpgrade)
        defer { a.close() }
        let first = try a.cache.insertUploaded(draft("shared"), conditions: .none, at: Timestamp(microseconds: 1))
            .stored
        _ = try a.cache.object(bucket, objectName("shared"), generation: nil)
        #expect(try a.readIsCached(bucket, "shared"))

        // B's start returns once it holds the lease shared, which A gives only after it stopped caching.
        let b = try Node(schema, timing: Self.slowToUpgrade)
        defer { b.close() }
        #expect(!a.store.isSoleWriter && !b.store.isSoleWriter)
        #expect(a.cache.cachedObject(bucket, objectName("shared")) == nil)
        #expect(a.cache.count == 0, "A forgot what it had cached")

        let second = try b.cache.insertUploaded(draft("shared"), conditions: .none, at: Timestamp(microseconds: 2))
            .stored
        #expect(second.generation > first.generation)
        #expect(try a.cache.object(bucket, objectName("shared"), generation: nil)?.generation == second.generation)
        #expect(try !a.readIsCached(bucket, "shared"), "with two nodes every read goes to PostgreSQL")
        let third = try a.cache.insertUploaded(draft("shared"), conditions: .none, at: Timestamp(microseconds: 3))
            .stored
        #expect(try b.cache.object(bucket, objectName("shared"), generation: nil)?.generation == third.generation)
        _ = try b.cache.deleteObject(
            bucket, objectName("shared"), generation: nil, conditions: .none, softDeletion: nil)
        #expect(try a.cache.object(bucket, objectName("shared"), generation: nil) == nil)
    }

    @Test func aWriterWithoutALeaseMakesTheOwnerHandOverFirst() throws {
        let schema = try PostgresTestSchema()
        let owner = try Node(schema, timing: Self.slowToUpgrade)
        defer { owner.close() }
        _ = try owner.cache.insertUploaded(draft("tool"), conditions: .none, at: Timestamp(microseconds: 1))
        _ = try owner.cache.object(bucket, objectName("tool"), generation: nil)
        #expect(try owner.readIsCached(bucket, "tool"))
        // A plain store (a tool, an older test) takes part only through its transactions' admission.
        let plain = try schema.open()
        defer { plain.close() }
        let written = try plain.insertUploaded(draft("tool"), conditions: .none, at: Timestamp(microseconds: 2)).stored
        #expect(!owner.store.isSoleWriter)
        #expect(try owner.cache.object(bucket, objectName("tool"), generation: nil)?.generation == written.generation)
    }

    @Test func theLastNodeLeftCachesAgainFromAnEmptyCache() async throws {
        let schema = try PostgresTestSchema()
        let a = try Node(schema)
        defer { a.close() }
        let b = try Node(schema)
        _ = try a.cache.insertUploaded(draft("left"), conditions: .none, at: Timestamp(microseconds: 1))
        _ = try a.cache.object(bucket, objectName("left"), generation: nil)
        let latest = try b.cache.insertUploaded(draft("left"), conditions: .none, at: Timestamp(microseconds: 2)).stored
        b.close()
        #expect(await eventually { a.store.isSoleWriter }, "A takes the lease once B has gone")
        #expect(try a.cache.object(bucket, objectName("left"), generation: nil)?.generation == latest.generation)
        #expect(try a.readIsCached(bucket, "left"))
    }

    @Test func anOwnerThatDoesNotHandOverIsStoppedAfterTheTimeout() async throws {
        let schema = try PostgresTestSchema()
        // A session that holds the lease exclusively and never answers a hand-over request (a hung node).
        let hung = try schema.open(poolSize: 1)
        defer { hung.close() }
        let lock = "\(WriterLease.lockClass), \(WriterLease.lockObject(namespace: schema.name))"
        #expect(try hung.scalar("SELECT pg_try_advisory_lock(\(lock))::text") == "true")
        let hungPID = try hung.withPooledConnection { $0 }

        let node = try Node(schema)
        defer { node.close() }
        #expect(
            await eventually {
                (try? node.store.scalar("SELECT count(*)::text FROM pg_stat_activity WHERE pid = \(hungPID)")) == "0"
            }, "the hung owner's connection was terminated")
        _ = try node.cache.insertUploaded(draft("after"), conditions: .none, at: Timestamp(microseconds: 1))
        #expect(await eventually { node.store.isSoleWriter }, "and the node alone takes the lease")
    }

    @Test func aWriteUnderAnEpochThatMovedOnIsNotCommittedAsTheOwners() throws {
        let schema = try PostgresTestSchema()
        let owner = try Node(schema, timing: Self.slowToUpgrade)
        defer { owner.close() }
        _ = try owner.cache.insertUploaded(draft("fenced"), conditions: .none, at: Timestamp(microseconds: 1))
        #expect(owner.store.isSoleWriter)
        // What a new owner does before it caches; this node has not noticed (it still holds its lock).
        _ = try owner.store.textRows(
            "UPDATE counters SET value = value + 1 WHERE name = 'writer_lease_epoch' RETURNING value::text")
        // The write finds the epoch moved, asks for a hand-over (which this node's lease answers), and commits as a
        // sharer's write.
        let written = try owner.cache.insertUploaded(draft("fenced"), conditions: .none, at: Timestamp(microseconds: 2))
            .stored
        #expect(!owner.store.isSoleWriter)
        #expect(try owner.cache.object(bucket, objectName("fenced"), generation: nil)?.generation == written.generation)
    }

    @Test func aNewOwnerWaitsForTheTransactionsOfAnOwnerThatLostTheLock() async throws {
        let schema = try PostgresTestSchema()
        let old = try Node(schema, timing: Self.slowToUpgrade)
        defer { old.close() }
        #expect(old.store.isSoleWriter)
        // A write transaction of the owner, admitted under its epoch, still open.
        let admitted = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = Mutex(false)
        let store = old.store
        Thread {
            _ = try? store.transaction { _ in
                admitted.signal()
                release.wait()
            }
            finished.withLock { $0 = true }
        }.start()
        admitted.wait()
        // The owner's lock connection dies under it.
        let lock = WriterLease.lockObject(namespace: schema.name)
        let killer = try schema.open(poolSize: 1)
        defer { killer.close() }
        _ = try killer.textRows(
            """
            SELECT pg_terminate_backend(pid)::text FROM pg_locks WHERE locktype = 'advisory'
                AND classid::bigint = \(WriterLease.lockClass) AND objid::bigint = \(lock) AND mode = 'ExclusiveLock'
            """)
        #expect(await eventually { !old.store.isSoleWriter })
        // Whoever takes the lock next (the old node again, or a new one) moves the epoch first, and that waits for
        // the open transaction: nobody caches while it may still commit.
        let newcomer = Mutex<Node?>(nil)
        Thread {
            let node = try? Node(schema, timing: Self.slowToUpgrade)
            newcomer.withLock { $0 = node }
        }.start()
        try await Task.sleep(for: .milliseconds(800))
        #expect(!old.store.isSoleWriter)
        #expect(newcomer.withLock { $0?.store.isSoleWriter } != true)
        release.signal()
        #expect(await eventually { finished.withLock { $0 } })
        #expect(await eventually { newcomer.withLock { $0 } != nil }, "the newcomer started once it had ended")
        let owners = [old.store.isSoleWriter, newcomer.withLock { $0?.store.isSoleWriter } == true].filter { $0 }
        #expect(owners.count <= 1)
        // Both may share instead (the newcomer took the lock shared while the killed session still held it): then
        // nobody caches and the epoch need not move.
        if !owners.isEmpty {
            #expect(try killer.scalar("SELECT value::text FROM counters WHERE name = 'writer_lease_epoch'") != "1")
        }
        newcomer.withLock { $0?.close() }
    }

    @Test func aStartingNodeStoppedWhileItWaitsToMoveTheEpochTriesAgain() async throws {
        let schema = try PostgresTestSchema()
        let admin = try schema.open(poolSize: 1)
        defer { admin.close() }
        // An old owner's transaction, still open: it holds the epoch row, so a new owner's move of it waits.
        let open = try Connection(conninfo: try PostgresURL(schema.url).conninfo, trace: nil)
        defer { open.close() }
        try open.execute(
            "BEGIN; SELECT value FROM \"\(schema.name)\".counters WHERE name = 'writer_lease_epoch' FOR SHARE")
        let started = Mutex<Result<Node, any Error>?>(nil)
        Thread {
            let node = Result { try Node(schema, timing: Self.slowToUpgrade) }
            started.withLock { $0 = node }
        }.start()
        let holder = """
            SELECT pid::text FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ExclusiveLock'
                AND classid::bigint = \(WriterLease.lockClass)
                AND objid::bigint = \(WriterLease.lockObject(namespace: schema.name))
            """
        #expect(await eventually { (try? admin.scalar(holder)) != nil }, "it took the lock")
        let first = try admin.scalar(holder)
        // Another node stops the waiting node's lock connection (as it does to an owner that does not hand over).
        _ = try admin.scalar("SELECT pg_terminate_backend(\(first ?? "0"))::text")
        #expect(
            await eventually { (try? admin.scalar(holder)).map { $0 != first } ?? false },
            "it took the lock again on a new connection")
        #expect(started.withLock { $0 } == nil, "and still waits for the open transaction")
        try open.execute("COMMIT")
        #expect(await eventually { started.withLock { $0 } != nil })
        let node = try #require(try started.withLock { $0 }?.get(), "the node started")
        defer { node.close() }
        #expect(await eventually { node.store.isSoleWriter })
        let epoch = try admin.scalar("SELECT value::text FROM counters WHERE name = 'writer_lease_epoch'")
        #expect(epoch == "1", "moved once: the stopped move never committed")
    }

    /// Short heartbeats, but sharers wait long before they try to own the lease again.
    static var slowToUpgrade: PostgresMetadataStore.WriterLeaseTiming {
        var timing = fast
        timing.upgradeInterval = .seconds(60)
        return timing
    }
}
