import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Synchronization
import Testing

/// A garbage collection that runs while writes are committing never deletes bytes a write then acknowledges: on
/// every write path that stores new bytes, a collection that takes every unreferenced blob, whatever its age, runs
/// right before the write's commit. The write then either succeeds with its bytes readable (its blob was an active
/// session's, which no collection takes) or answers 503 with the old version standing, and the client's retry
/// succeeds. Before commits and collections excluded each other, the commit acknowledged bytes the collection had
/// just deleted (a 200, then 404 "blob does not exist" on every read).
@Suite struct CollectionRaceTests {
    /// Runs one collection of every unreferenced blob at the first `insertObject` it sees, before the call.
    final class CollectorAtCommit: Sendable {
        private let fired = Atomic<Bool>(false)
        private let collected = Atomic<Int>(0)
        let app: SiloServerApp

        init(_ app: SiloServerApp) { self.app = app }

        var hook: StoreCallHooks.Hook {
            { [self] call, moment in
                guard call.method == "insertObject", moment == .before,
                    fired.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
                else { return }
                let (_, blobs) = app.collectGarbage(blobsRegisteredBefore: Timestamp(microseconds: .max))
                collected.store(blobs, ordering: .relaxed)
            }
        }

        var blobsCollected: Int { collected.load(ordering: .relaxed) }
    }

    /// Every write path of the fault matrix that stores new bytes, and the single-request uploads it does not run.
    static let paths: [FaultMatrixTests.WritePath] =
        FaultMatrixTests.paths.filter { !$0.name.contains("PATCH") && !$0.name.contains("delete") } + [
            FaultMatrixTests.WritePath(
                name: "XML PUT", overwrites: true,
                run: { c, n in [try xmlPut(c, n)] }, retry: { c, n in try xmlPut(c, n) },
                newState: FaultMatrixTests.contentIs(FaultMatrixTests.body)),
            FaultMatrixTests.WritePath(
                name: "GCS media upload", overwrites: true,
                run: { c, n in [try gcsMedia(c, n)] }, retry: { c, n in try gcsMedia(c, n) },
                newState: FaultMatrixTests.contentIs(FaultMatrixTests.body)),
        ]

    static func xmlPut(_ c: HTTPTestClient, _ name: String) throws -> Int {
        try c.send(method: "PUT", target: FaultMatrixTests.xmlPath(name), body: FaultMatrixTests.body).status
    }

    static func gcsMedia(_ c: HTTPTestClient, _ name: String) throws -> Int {
        try c.send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=" + PercentCoding.encodeComponent(name),
            body: FaultMatrixTests.body
        ).status
    }

    @Test(arguments: paths.indices)
    func aCollectionAtTheCommitNeverTearsAWrite(_ index: Int) throws {
        let path = Self.paths[index]
        let hooks = StoreCallHooks()
        let server = try TestServer(hooks: hooks)
        let client = server.client()
        let matrix = FaultMatrixTests()
        let name = "race/\(index)"
        try matrix.prepare(client, name, path)
        server.app.waitForBlobReclaims()
        let collector = CollectorAtCommit(server.app)
        hooks.set(collector.hook)
        let statuses = try path.run(client, name)
        server.app.waitForBlobReclaims()
        hooks.set(nil)
        let sessionHeld = path.name.contains("resumable")
        let failed = statuses.first { $0 >= 400 }
        if sessionHeld {
            // A session's blob is referenced until its commit: the collection leaves it, and the upload succeeds.
            #expect(failed == nil, "\(path.name): \(statuses)")
        } else {
            // The collection took the pending bytes first: the commit refuses with a 503 the client retries.
            #expect(failed == 503, "\(path.name): \(statuses)")
            #expect(collector.blobsCollected >= 1, "\(path.name): the collection took nothing")
        }
        if failed == nil {
            #expect(try path.newState(client, name), "\(path.name): success, but the write is not there")
        } else {
            #expect(
                try client.get(objectPath(name) + "?alt=media").body == FaultMatrixTests.old,
                "\(path.name): a refused write changed the object")
            let retried = try path.retry(client, name)
            #expect((200..<300).contains(retried), "\(path.name): retry answered \(retried)")
            #expect(try path.newState(client, name), "\(path.name): retry succeeded, but the write is not there")
        }
        let problems = try matrix.consistencyProblems(server)
        #expect(problems.isEmpty, "\(path.name): \(problems.prefix(5).joined(separator: "; "))")
    }
}
