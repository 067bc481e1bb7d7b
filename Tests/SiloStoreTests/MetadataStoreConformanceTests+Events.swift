import Foundation
import SiloCore
import SiloPostgres
import SiloTesting
import Synchronization
import Testing

/// The storage-event outbox and per-bucket usage, on every store: which events each write leaves (written in its
/// transaction), how claims lease them, and the counts the writes keep.
extension MetadataStoreConformanceTests {
    /// The outbox as (kind, name, generation), oldest first, claimed once far in the future (so everything is due).
    private func drain(_ store: any MetadataStore, owner: String = "test") throws -> [OutboxEvent] {
        let later = Timestamp(microseconds: Int64.max / 4)
        return try store.claimEvents(owner: owner, now: later, leaseUntil: later, limit: 1000)
    }

    private func summary(_ events: [OutboxEvent]) -> [String] {
        events.map { "\($0.event.kind.rawValue) \($0.event.object.name.rawValue)#\($0.event.object.generation)" }
    }

    @Test(arguments: MetadataBackend.allCases)
    func writesLeaveExactlyTheirEvents(_ backend: MetadataBackend) throws {
        let fixture = try backend.open(events: true)
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let time = fixture.clock.now()
        let plain = bucketName("plain")
        let versioned = bucketName("versioned")
        _ = try store.createBucket(plain, versioning: false, at: time)
        _ = try store.createBucket(versioned, versioning: true, at: time)

        let a1 = try store.insertUploaded(draft("a", bucket: plain), conditions: .none, at: time).stored
        let a2 = try store.insertUploaded(draft("a", bucket: plain), conditions: .none, at: time).stored
        let patched = try store.updateObject(plain, objectName("a"), conditions: .none, at: time) {
            $0.customMetadata["x"] = "y"
        }
        // A refused write leaves nothing.
        #expect(throws: StorageError.self) {
            _ = try store.insertUploaded(
                draft("a", bucket: plain), conditions: Preconditions(ifGenerationMatch: 1), at: time)
        }
        _ = try store.deleteObject(plain, objectName("a"), generation: nil, conditions: .none)
        let b1 = try store.insertUploaded(draft("b", bucket: versioned), conditions: .none, at: time).stored
        let b2 = try store.insertUploaded(draft("b", bucket: versioned), conditions: .none, at: time).stored
        _ = try store.deleteObject(versioned, objectName("b"), generation: nil, conditions: .none)
        _ = try store.deleteObject(versioned, objectName("b"), generation: b1.generation, conditions: .none)
        let c = try store.insertUploaded(draft("c", bucket: plain), conditions: .none, at: time).stored
        let moved = try store.moveObject(
            plain, from: objectName("c"), to: objectName("d"), sourceConditions: .none, destinationConditions: .none,
            at: time
        ).moved

        let events = try drain(store)
        #expect(
            summary(events) == [
                "finalize a#\(a1.generation)",
                "delete a#\(a1.generation)", "finalize a#\(a2.generation)",
                "metadataUpdate a#\(a2.generation)",
                "delete a#\(a2.generation)",
                "finalize b#\(b1.generation)",
                "archive b#\(b1.generation)", "finalize b#\(b2.generation)",
                "archive b#\(b2.generation)",
                "delete b#\(b1.generation)",
                "finalize c#\(c.generation)",
                "delete c#\(c.generation)", "finalize d#\(moved.generation)",
            ])
        #expect(events.map(\.sequence) == events.map(\.sequence).sorted() && Set(events.map(\.sequence)).count == 13)
        // The data is the version as the change left it.
        #expect(events[3].event.object == patched && events[3].event.object.metageneration == 2)
        #expect(events.allSatisfy { $0.attempts == 0 && $0.event.time == time })
        #expect(try store.outboxStatus() == OutboxStatus(pending: 13, oldest: time))
    }

    @Test(arguments: MetadataBackend.allCases)
    func storesWithoutEventsRecordNone(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        _ = try store.insertUploaded(draft("a"), conditions: .none, at: fixture.clock.now())
        _ = try store.deleteObject(bucket, objectName("a"), generation: nil, conditions: .none)
        #expect(try drain(store).isEmpty)
        #expect(try store.outboxStatus() == OutboxStatus(pending: 0, oldest: nil))
    }

    @Test(arguments: MetadataBackend.allCases)
    func claimsLeaseEventsUntilDoneOrRetried(_ backend: MetadataBackend) throws {
        let fixture = try backend.open(events: true)
        defer { withExtendedLifetime(fixture) {} }
        let t0 = fixture.clock.now()
        for name in ["a", "b", "c"] {
            _ = try fixture.store.insertUploaded(draft(name), conditions: .none, at: t0)
        }
        let t1 = Timestamp(microseconds: t0.microseconds + 1_000_000)
        let lease = Timestamp(microseconds: t1.microseconds + 30_000_000)
        let first = try fixture.store.claimEvents(owner: "n1", now: t1, leaseUntil: lease, limit: 2)
        #expect(first.map(\.event.object.name.rawValue) == ["a", "b"])
        // Leased: another claimer gets only the rest; nothing is due before it was written.
        let second = try fixture.store.claimEvents(owner: "n2", now: t1, leaseUntil: lease, limit: 10)
        #expect(second.map(\.event.object.name.rawValue) == ["c"])
        #expect(try fixture.store.claimEvents(owner: "n3", now: t1, leaseUntil: lease, limit: 10).isEmpty)
        #expect(
            try fixture.store.claimEvents(
                owner: "n3", now: Timestamp(microseconds: t0.microseconds - 1), leaseUntil: lease, limit: 10
            ).isEmpty)

        try fixture.store.completeEvent(first[0].sequence)
        // A retry by someone who does not hold the lease changes nothing.
        let retryAt = Timestamp(microseconds: t1.microseconds + 5_000_000)
        try fixture.store.retryEvent(first[1].sequence, owner: "n2", retryAt: retryAt)
        try fixture.store.retryEvent(first[1].sequence, owner: "n1", retryAt: retryAt)
        #expect(try fixture.store.outboxStatus() == OutboxStatus(pending: 2, oldest: t0))
        // Not due before its retry time, then due again with the attempt counted and the same id.
        #expect(try fixture.store.claimEvents(owner: "n1", now: t1, leaseUntil: lease, limit: 10).isEmpty)
        let retried = try fixture.store.claimEvents(owner: "n1", now: retryAt, leaseUntil: lease, limit: 10)
        #expect(retried.map(\.sequence) == [first[1].sequence] && retried[0].attempts == 1)
        #expect(retried[0].event == first[1].event)

        // A claim whose holder died: after its lease, the next claim takes it, same id, even after a reopen.
        try fixture.reopen()
        let taken = try fixture.store.claimEvents(owner: "n4", now: lease, leaseUntil: lease, limit: 10)
        #expect(taken.map(\.sequence) == [first[1].sequence, second[0].sequence])
        #expect(taken.map(\.event) == [first[1].event, second[0].event])
        for event in taken { try fixture.store.completeEvent(event.sequence) }
        #expect(try fixture.store.outboxStatus() == OutboxStatus(pending: 0, oldest: nil))
        // Sequences are never handed out again.
        _ = try fixture.store.insertUploaded(draft("d"), conditions: .none, at: t0)
        let next = try drain(fixture.store)
        #expect(next.count == 1 && next[0].sequence > taken.map(\.sequence).max()!)
    }

    @Test(arguments: MetadataBackend.allCases)
    func bucketUsageFollowsEveryWrite(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let time = fixture.clock.now()
        let plain = bucketName("plain")
        let versioned = bucketName("versioned")
        _ = try store.createBucket(plain, versioning: false, at: time)
        _ = try store.createBucket(versioned, versioning: true, at: time)
        #expect(try store.bucketUsage() == [plain: .zero, versioned: .zero])

        _ = try store.insertUploaded(draft("a", bucket: plain, size: 10), conditions: .none, at: time)
        _ = try store.insertUploaded(draft("a", bucket: plain, size: 7), conditions: .none, at: time)
        _ = try store.insertUploaded(draft("b", bucket: plain, size: 5), conditions: .none, at: time)
        _ = try store.updateObject(plain, objectName("b"), conditions: .none, at: time) { $0.contentType = "x/y" }
        _ = try store.moveObject(
            plain, from: objectName("b"), to: objectName("c"), sourceConditions: .none, destinationConditions: .none,
            at: time)
        #expect(try store.bucketUsage()[plain] == BucketUsage(objects: 2, bytes: 12))

        let v1 = try store.insertUploaded(draft("v", bucket: versioned, size: 100), conditions: .none, at: time).stored
        _ = try store.insertUploaded(draft("v", bucket: versioned, size: 50), conditions: .none, at: time)
        #expect(
            try store.bucketUsage()[versioned]
                == BucketUsage(objects: 1, bytes: 50, noncurrentObjects: 1, noncurrentBytes: 100))
        _ = try store.deleteObject(versioned, objectName("v"), generation: nil, conditions: .none)
        #expect(try store.bucketUsage()[versioned] == BucketUsage(noncurrentObjects: 2, noncurrentBytes: 150))
        _ = try store.deleteObject(versioned, objectName("v"), generation: v1.generation, conditions: .none)
        #expect(try store.bucketUsage()[versioned] == BucketUsage(noncurrentObjects: 1, noncurrentBytes: 50))
        // A live generation deleted by number leaves the live counts.
        let w = try store.insertUploaded(draft("w", bucket: versioned, size: 9), conditions: .none, at: time).stored
        _ = try store.deleteObject(versioned, objectName("w"), generation: w.generation, conditions: .none)
        #expect(try store.bucketUsage()[versioned] == BucketUsage(noncurrentObjects: 1, noncurrentBytes: 50))
        // A refused write counts nothing.
        #expect(throws: StorageError.self) {
            _ = try store.insertUploaded(
                draft("a", bucket: plain, size: 1000), conditions: Preconditions(ifGenerationMatch: 1), at: time)
        }
        // Soft-deleted versions count in neither; restoring one counts it live again.
        let soft = SoftDeletion(at: time, hardDeleteAt: Timestamp(microseconds: time.microseconds + 1_000_000))
        let gone = try store.deleteObject(
            plain, objectName("c"), generation: nil, conditions: .none, softDeletion: soft)
        #expect(try store.bucketUsage()[plain] == BucketUsage(objects: 1, bytes: 7))
        _ = try store.restoreObject(plain, objectName("c"), generation: gone.generation, conditions: .none, at: time)
        #expect(try store.bucketUsage()[plain] == BucketUsage(objects: 2, bytes: 12))

        try fixture.reopen()
        #expect(try fixture.store.bucketUsage()[plain] == BucketUsage(objects: 2, bytes: 12))
        try fixture.store.reset()
        _ = try fixture.store.ensureBucket(plain)
        #expect(try fixture.store.bucketUsage() == [plain: .zero])
    }
}

/// Nodes sharing one PostgreSQL database: concurrent claims never hand one event to two nodes.
@Suite struct PostgresOutboxClaimTests {
    @Test func concurrentClaimsFromTwoNodesAreDisjoint() throws {
        let schema = try PostgresTestSchema()
        var configuration = schema.configuration
        configuration.recordsEvents = true
        let nodeA = try schema.open(configuration)
        let nodeB = try schema.open(configuration)
        let time = Timestamp.now()
        for i in 0..<200 { _ = try nodeA.insertUploaded(draft("o\(i)"), conditions: .none, at: time) }
        let lease = Timestamp(microseconds: time.microseconds + 600_000_000)
        let claimed = Mutex<[String: [Int64]]>([:])
        // Four claimers on each node take small batches at once until nothing is left.
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let (node, owner) = index % 2 == 0 ? (nodeA, "a") : (nodeB, "b")
            while let batch = try? node.claimEvents(owner: owner, now: time, leaseUntil: lease, limit: 3),
                !batch.isEmpty
            {
                claimed.withLock { $0[owner, default: []] += batch.map(\.sequence) }
            }
        }
        let all = claimed.withLock { ($0["a"] ?? []) + ($0["b"] ?? []) }
        #expect(all.count == 200, "every event claimed once")
        #expect(Set(all).count == 200, "no event claimed by two claimers")
        withExtendedLifetime(schema) {}
    }
}
