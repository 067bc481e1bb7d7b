import Dispatch
import SiloCore
import SiloHTTP
import SiloServer
import SiloTestStores
import SiloTesting
import Synchronization
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// The blobs that successful writes free are deleted after the answer (``BlobReclaimer``), not before it: an
/// overwrite or a delete of a large object no longer waits for the file system to free its bytes.
@Suite struct BlobReclaimTests {
    /// Holds every `deleteBlob` until `open()`, and notes what happened meanwhile.
    private final class DeletionGate: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        let started = Atomic<Int>(0)
        let finished = Atomic<Int>(0)

        var hook: StoreCallHooks.Hook {
            { [self] call, moment in
                guard call.method == "deleteBlob" else { return }
                switch moment {
                case .before:
                    started.add(1, ordering: .relaxed)
                    // Bounded: with deletions back on the request path the overwrite would answer after this.
                    _ = gate.wait(timeout: .now() + 10)
                case .after:
                    finished.add(1, ordering: .relaxed)
                }
            }
        }

        func open() { gate.signal() }
    }

    @Test("an overwrite answers while the blob of the version it replaced is still being deleted")
    func overwriteAnswersBeforeTheDeletion() throws {
        let hooks = StoreCallHooks()
        let server = try TestServer(hooks: hooks)
        let client = server.client()
        #expect(try client.mediaUpload("big.bin", pattern(300_000, seed: 1)).status == 200)
        let gate = DeletionGate()
        hooks.set(gate.hook)
        defer { hooks.set(nil) }
        let overwrite = try client.mediaUpload("big.bin", pattern(200_000, seed: 2))
        #expect(overwrite.status == 200)
        // Answered, and the new version served, while the old blob's deletion has not finished.
        #expect(gate.finished.load(ordering: .relaxed) == 0)
        #expect(try client.get(objectPath("big.bin") + "?alt=media").body == pattern(200_000, seed: 2))
        gate.open()
        server.app.waitForBlobReclaims()
        if !server.blobs.readersSurviveDeletion {
            // A store whose deletions break downloads under way (S3) leaves the blob to the collector's grace.
            #expect(gate.started.load(ordering: .relaxed) == 0)
            #expect(server.app.collectGarbage(graceSeconds: 0).blobs == 1)
        }
        #expect(gate.started.load(ordering: .relaxed) == 1)
        #expect(gate.finished.load(ordering: .relaxed) == 1)
        // Only the live version's blob is left, and nothing waits on the garbage list.
        let live = try #require(
            try server.metadata.object(try BucketName(bucket), try ObjectName("big.bin"), generation: nil))
        if let listing = server.blobs as? any BlobListing {
            #expect(Set(try listing.allBlobIDs()) == [live.blobID])
        }
        #expect(
            try server.metadata.garbageBlobs(registeredBefore: Timestamp(microseconds: .max), limit: 10).isEmpty)
    }

    @Test("a delete answers before its blob is deleted, and the maintenance pass waits for the deletion")
    func deleteAnswersBeforeTheDeletion() throws {
        let hooks = StoreCallHooks()
        let server = try TestServer(hooks: hooks)
        let client = server.client()
        #expect(try client.mediaUpload("gone.bin", pattern(100_000, seed: 3)).status == 200)
        let gate = DeletionGate()
        hooks.set(gate.hook)
        defer { hooks.set(nil) }
        #expect(try client.send(method: "DELETE", target: objectPath("gone.bin")).status == 204)
        #expect(gate.finished.load(ordering: .relaxed) == 0)
        #expect(try client.get(objectPath("gone.bin")).status == 404)
        gate.open()
        // The pass runs after the queued deletion, so it finds nothing left to collect — unless the store's
        // deletions break downloads under way (S3): then the blob waited for the collector, and this pass takes it.
        let survive = server.blobs.readersSurviveDeletion
        #expect(server.app.collectGarbage(graceSeconds: 0).blobs == (survive ? 0 : 1))
        #expect(gate.finished.load(ordering: .relaxed) == 1)
    }

    @Test("past its bound the queue leaves blobs to the collector and counts them")
    func theQueueIsBounded() {
        let reclaimer = BlobReclaimer(limit: 2)
        let gate = DispatchSemaphore(value: 0)
        let deleted = Mutex<[BlobID]>([])
        let ids = (0..<3).map { _ in BlobID.random() }
        for id in ids {
            reclaimer.reclaim(id) { id in
                gate.wait()
                deleted.withLock { $0.append(id) }
            }
        }
        #expect(reclaimer.backlog.waiting == 2)
        #expect(reclaimer.backlog.leftToCollector == 1)
        gate.signal()
        gate.signal()
        reclaimer.wait()
        #expect(deleted.withLock { $0 } == Array(ids.prefix(2)))
        #expect(reclaimer.backlog.waiting == 0)
    }
}
