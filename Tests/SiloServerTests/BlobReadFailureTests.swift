import SiloCore
import SiloHTTP
import SiloTestStores
import SiloTesting
import SiloWire
import Synchronization
import Testing

/// Reads of bytes the blob store cannot serve. The object exists (its metadata answers 200), so a missing blob is a
/// logged 503 on every API, never the 404 that clients take for "no such object" and do not retry. A store that
/// fails before the head has gone is a 503; one that fails after it cuts the connection, so the client sees a
/// truncated body, never a clean short one. The store here is in memory (no file to send), as an S3 store is.
@Suite struct BlobReadFailureTests {
    let hooks = StoreCallHooks()
    let log = CapturingLogHandler()
    let server: TestServer
    let client: HTTPTestClient
    static let body = pattern(300 << 10, seed: 21)

    init() throws {
        server = try TestServer(
            metadata: InMemoryMetadataStore(), blobs: InMemoryBlobStore(), hooks: hooks, logger: log.logger())
        client = server.client()
        try XMLMultipartTests.createBucket(client)
    }

    private func record(_ name: String) throws -> ObjectRecord {
        try #require(try server.metadata.object(try BucketName(bucket), try ObjectName(name), generation: nil))
    }

    /// The read paths of the three APIs for `name`'s bytes.
    private static func reads(_ name: String) -> [String] {
        [
            objectPath(name) + "?alt=media",
            "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name) + "?alt=media",
            "/download/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name) + "?alt=media",
            XMLMultipartTests.path(name),
        ]
    }

    @Test func aMissingBlobIsALogged503OnEveryAPI() throws {
        #expect(try client.mediaUpload("lost.bin", Self.body).status == 200)
        try server.blobs.deleteBlob(try record("lost.bin").blobID)
        for target in Self.reads("lost.bin") {
            let read = try client.get(target)
            #expect(read.status == 503, "\(target): \(read.status)")
            let id = try #require(read.headers["X-Request-Id"])
            #expect(!read.text.contains("blob"), "\(target): the store's words reached the client")
            let logged = log.logged.filter { $0.metadata["silo.request_id"] == id }
            #expect(logged.contains { $0.metadata["silo.error"]?.contains("missing from the blob store") == true })
        }
        // The object is there: its metadata answers, and a copy of it is refused with the same 503, not a 404.
        #expect(try client.get(objectPath("lost.bin")).status == 200)
        let copy = try client.send(
            method: "POST", target: "/storage/v1/b/\(bucket)/o/lost.bin/copyTo/b/\(bucket)/o/copy.bin")
        #expect(copy.status == 503)
    }

    @Test func aBlobShorterThanItsVersionIsA503() throws {
        #expect(try client.mediaUpload("short.bin", Self.body).status == 200)
        // A store that lists fewer of a blob's parts than it holds (an S3 store coming back) reports it shorter.
        let writer = try server.blobs.makeWriter(try record("short.bin").blobID, at: 0)
        try Self.body.prefix(1000).withUnsafeBytes { try writer.write($0) }
        try writer.sync()
        writer.close()
        for target in Self.reads("short.bin") {
            #expect(try client.get(target).status == 503, "\(target)")
        }
    }

    @Test(arguments: ["openReader", "read"])
    func aStoreThatFailsBeforeTheHeadIsA503(_ method: String) throws {
        #expect(try client.mediaUpload("down.bin", Self.body).status == 200)
        hooks.set { call, moment in
            if call.method == method && moment == .before { throw StorageError(.unavailable, "injected: store down") }
        }
        defer { hooks.set(nil) }
        for target in Self.reads("down.bin") {
            let read = try client.get(target)
            #expect(read.status == 503, "\(target) with \(method) failing: \(read.status), \(read.body.count) bytes")
        }
    }

    @Test func aStoreThatFailsAfterTheHeadCutsTheConnection() throws {
        #expect(try client.mediaUpload("cut.bin", Self.body).status == 200)
        for target in Self.reads("cut.bin") {
            // The first reads succeed (the head goes out with them); a later one fails.
            let reads = Mutex(0)
            hooks.set { call, moment in
                guard call.method == "read", moment == .before else { return }
                let count = reads.withLock { count in
                    count += 1
                    return count
                }
                if count > 2 { throw StorageError(.unavailable, "injected: store gone mid-body") }
            }
            let fresh = server.client()
            #expect(throws: (any Error).self, "\(target): a short body read as complete") {
                let read = try fresh.get(target)
                Issue.record("\(target): \(read.status) with \(read.body.count) of \(Self.body.count) bytes")
            }
            hooks.set(nil)
        }
        // The server is fine afterwards.
        #expect(try client.get(objectPath("cut.bin") + "?alt=media").body == Self.body)
    }
}
