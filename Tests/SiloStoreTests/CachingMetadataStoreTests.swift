import SiloCore
import SiloSQLite
import SiloTesting
import Testing

/// The read cache `silo serve` puts in front of its SQLite store (the conformance suite also runs on it, as
/// `cachedSQLite`). These check what the suite cannot see: that reads are served from memory, that every kind of
/// write makes the next read go to the store, that racing readers never see a version older than a finished write,
/// and the process lock that makes caching safe.
@Suite struct CachingMetadataStoreTests {
    /// SQLite with a counter of the object lookups that reached it.
    final class Fixture: Sendable {
        let directory: TempDirectory
        let path: String
        let lookups = BlockingMutex(0)
        let store: CachingMetadataStore

        init(capacity: Int = 10_000) throws {
            directory = try TempDirectory()
            path = directory.path + "/metadata.sqlite"
            var configuration = SQLiteMetadataStore.Configuration()
            configuration.lockAgainstOtherProcesses = true
            let lookups = self.lookups
            configuration.trace = { sql in
                if sql.hasPrefix("SELECT") && sql.contains("FROM objects") { lookups.withLock { $0 += 1 } }
            }
            store = CachingMetadataStore(
                try SQLiteMetadataStore(path: path, configuration: configuration), capacity: capacity)
        }

        var storeReads: Int { lookups.withLock { $0 } }
    }

    @Test func repeatedReadsOfALiveObjectAreServedFromMemory() throws {
        let fixture = try Fixture()
        let (stored, _) = try fixture.store.insertUploaded(
            draft("a"), conditions: .none, at: Timestamp(microseconds: 1))
        let before = fixture.storeReads
        for _ in 0..<10 {
            #expect(try fixture.store.object(bucketName(), objectName("a"), generation: nil) == stored)
        }
        #expect(fixture.storeReads == before + 1)
        // The live generation asked for by number is the cached one too; another generation is not.
        _ = try fixture.store.object(bucketName(), objectName("a"), generation: stored.generation)
        #expect(fixture.storeReads == before + 1)
        #expect(try fixture.store.object(bucketName(), objectName("a"), generation: stored.generation - 1) == nil)
        #expect(fixture.storeReads == before + 2)
        // Absent names are not cached (a later insert needs no invalidation to be seen).
        #expect(try fixture.store.object(bucketName(), objectName("nope"), generation: nil) == nil)
        #expect(try fixture.store.object(bucketName(), objectName("nope"), generation: nil) == nil)
        #expect(fixture.storeReads == before + 4)
    }

    /// The stamp a replayed answer is checked against goes out of date with every kind of write of its object,
    /// and with every bucket write, but not with a write of another object; none is given while answers from
    /// memory are not allowed, and none stays current once they stop.
    @Test func theCacheStampFollowsItsObject() throws {
        let fixture = try Fixture()
        let store = fixture.store
        func stamp(_ name: String = "s") throws -> CacheStamp {
            try #require(store.cacheStamp(bucketName(), objectName(name)))
        }
        var last = try stamp()
        func changed(_ what: Comment) throws {
            #expect(!store.isCurrent(last), what)
            last = try stamp()
            #expect(store.isCurrent(last))
        }
        let (first, _) = try store.insertUploaded(draft("s"), conditions: .none, at: Timestamp(microseconds: 1))
        try changed("insert")
        _ = try store.object(bucketName(), objectName("s"), generation: nil)
        #expect(store.isCurrent(last), "a read, and the fill it makes, change nothing")
        let other = try stamp("another-object")
        #expect(other.stripe != last.stripe)
        _ = try store.insertUploaded(draft("another-object"), conditions: .none, at: Timestamp(microseconds: 2))
        #expect(store.isCurrent(last), "a write of another object leaves this one's stamp current")
        #expect(!store.isCurrent(other))
        _ = try store.updateObject(
            bucketName(), objectName("s"), generation: nil, conditions: .none, at: Timestamp(microseconds: 3)
        ) { $0.contentType = "text/csv" }
        try changed("update")
        _ = try store.moveObject(
            bucketName(), from: objectName("another-object"), to: objectName("s"), sourceConditions: .none,
            destinationConditions: .none, at: Timestamp(microseconds: 4))
        try changed("a move onto it")
        _ = try store.updateBucket(bucketName(), at: Timestamp(microseconds: 5)) { _ in }
        try changed("bucket update")
        let live = try #require(try store.object(bucketName(), objectName("s"), generation: nil))
        _ = try store.deleteObject(
            bucketName(), objectName("s"), generation: live.generation, conditions: .none, softDeletion: nil)
        try changed("delete")
        _ = first
        // A write that fails still changed the stamp: what it did before failing is not known here.
        #expect(throws: (any Error).self) {
            try store.insertUploaded(
                draft("s"), conditions: Preconditions(ifGenerationMatch: 12345), at: Timestamp(microseconds: 6))
        }
        try changed("failed write")
        store.stoppedBeingSoleWriter()
        #expect(store.cacheStamp(bucketName(), objectName("s")) == nil)
        #expect(!store.isCurrent(last))
        store.becameSoleWriter(until: .max)
        #expect(!store.isCurrent(last), "a stamp from before another writer stays out of date")
        _ = try stamp()
        let shared = CachingMetadataStore(try SQLiteMetadataStore(path: fixture.path + "-2"), soleWriter: false)
        #expect(shared.cacheStamp(bucketName(), objectName("s")) == nil)
    }

    @Test func everyWriteMakesTheNextReadSeeIt() throws {
        let fixture = try Fixture()
        let store = fixture.store
        let name = objectName("w")
        let read = { try store.object(bucketName(), name, generation: nil) }
        let (first, _) = try store.insertUploaded(draft("w"), conditions: .none, at: Timestamp(microseconds: 1))
        #expect(try read() == first)

        let (second, _) = try store.insertUploaded(draft("w"), conditions: .none, at: Timestamp(microseconds: 2))
        #expect(try read() == second)

        let updated = try store.updateObject(bucketName(), name, conditions: .none, at: Timestamp(microseconds: 3)) {
            $0.contentType = "image/png"
        }
        #expect(try read()?.fields.contentType == "image/png")
        #expect(try read()?.metageneration == updated.metageneration)

        _ = try store.deleteObject(bucketName(), name, generation: nil, conditions: .none)
        #expect(try read() == nil)

        let (third, _) = try store.insertUploaded(draft("w"), conditions: .none, at: Timestamp(microseconds: 4))
        #expect(try read() == third)
        try store.reset()
        #expect(try read() == nil)
    }

    @Test func aFailedWriteLeavesTheCacheCorrect() throws {
        let fixture = try Fixture()
        let (stored, _) = try fixture.store.insertUploaded(
            draft("f"), conditions: .none, at: Timestamp(microseconds: 1))
        _ = try fixture.store.object(bucketName(), objectName("f"), generation: nil)
        #expect(throws: StorageError.self) {
            _ = try fixture.store.insertUploaded(
                draft("f"), conditions: Preconditions(ifGenerationMatch: 0), at: Timestamp(microseconds: 2))
        }
        #expect(try fixture.store.object(bucketName(), objectName("f"), generation: nil) == stored)
    }

    @Test func theCacheStaysWithinItsCapacity() throws {
        let fixture = try Fixture(capacity: 3)
        for index in 0..<8 {
            _ = try fixture.store.insertUploaded(draft("c\(index)"), conditions: .none, at: Timestamp(microseconds: 1))
            _ = try fixture.store.object(bucketName(), objectName("c\(index)"), generation: nil)
        }
        #expect(fixture.store.count == 3)
        for index in 0..<8 {
            #expect(try fixture.store.object(bucketName(), objectName("c\(index)"), generation: nil) != nil)
        }
        #expect(fixture.store.count == 3)
    }

    /// Readers on several threads while a writer bumps the metageneration: a read that starts after an update
    /// returned must see that update or a later one, never the cached older version.
    @Test func racingReadersNeverSeeAVersionOlderThanAFinishedWrite() throws {
        let fixture = try Fixture()
        let store = fixture.store
        _ = try store.insertUploaded(draft("r"), conditions: .none, at: Timestamp(microseconds: 1))
        let finished = BlockingMutex<Int64>(1)
        let done = BlockingMutex(false)
        let stale = BlockingMutex(0)
        let reads = BlockingMutex(0)
        let updates: Int64 = 300
        onThreads(3) { thread in
            if thread == 0 {
                for step in 1...updates {
                    let record = try! store.updateObject(
                        bucketName(), objectName("r"), conditions: .none, at: Timestamp(microseconds: 1 + step)
                    ) { $0.customMetadata["step"] = "\(step)" }
                    finished.withLock { $0 = record.metageneration }
                }
                done.withLock { $0 = true }
            } else {
                while !done.withLock({ $0 }) {
                    let floor = finished.withLock { $0 }
                    let seen = try! store.object(bucketName(), objectName("r"), generation: nil)?.metageneration ?? 0
                    if seen < floor { stale.withLock { $0 += 1 } }
                    reads.withLock { $0 += 1 }
                }
            }
        }
        #expect(stale.withLock { $0 } == 0)
        #expect(reads.withLock { $0 } > 0)
        #expect(try store.object(bucketName(), objectName("r"), generation: nil)?.metageneration == updates + 1)
    }

    @Test func aSecondOwnerOfTheSameDatabaseIsRefusedUntilTheFirstCloses() throws {
        let fixture = try Fixture()
        var configuration = SQLiteMetadataStore.Configuration()
        configuration.lockAgainstOtherProcesses = true
        let error = #expect(throws: StorageError.self) {
            _ = try SQLiteMetadataStore(path: fixture.path, configuration: configuration)
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("another silo process") == true)
        (fixture.store.inner as? SQLiteMetadataStore)?.close()
        let second = try SQLiteMetadataStore(path: fixture.path, configuration: configuration)
        second.close()
    }
}

/// Caches are bounded by bytes as well as entries, so big metadata cannot grow them without bound.
@Suite struct CacheByteBoundTests {
    @Test func theRecordCacheStaysWithinItsBytes() throws {
        let inner = InMemoryMetadataStore()
        let store = CachingMetadataStore(inner, capacity: 10_000, maxBytes: 200_000)
        let big = String(repeating: "v", count: 8000)
        for index in 0..<100 {
            var object = draft("big/\(index)")
            object.fields.customMetadata = ["k": big]
            _ = try inner.insertUploaded(object, conditions: .none, at: Timestamp(microseconds: Int64(index + 1)))
            _ = try store.object(bucketName(), objectName("big/\(index)"), generation: nil)
            #expect(store.bytes <= 200_000)
        }
        #expect(store.count < 100)
        #expect(store.count > 10, "it still caches what fits")
    }

    @Test func boundedCacheCountsBytesAndSkipsHugeEntries() {
        let cache = BoundedCache<Int, [UInt8]>(capacity: 1000, maxBytes: 10_000) { _, value in value.count }
        for key in 0..<100 { cache.insert([UInt8](repeating: 1, count: 900), for: key) }
        #expect(cache.bytes <= 10_000)
        #expect(cache.count <= 11)
        cache.insert([UInt8](repeating: 2, count: 3000), for: 999)
        #expect(cache.value(for: 999) == nil, "an entry over a quarter of the budget is not kept")
        cache.insert([1, 2, 3], for: 5)
        cache.insert([1, 2, 3, 4], for: 5)
        #expect(cache.value(for: 5) == [1, 2, 3, 4])
    }
}
