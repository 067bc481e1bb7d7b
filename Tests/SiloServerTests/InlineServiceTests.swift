import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloTestStores
import SiloTesting
import Testing

@testable import SiloServerKit

/// The service a socket thread answers with (``ObjectService/inlineView(_:)``) reads memory only: the store's cached
/// live version, and nothing else. Every other use of the stores refuses before the store is called and marks the
/// attempt, so the request goes to a worker. Checked with the store calls recorded as the server makes them.
@Suite struct InlineServiceTests {
    let hooks = StoreCallHooks()
    let server: TestServer
    let bucket = try! BucketName("inline-bucket")
    let name = try! ObjectName("a.txt")

    init() throws {
        server = try TestServer(.inProcess, hooks: hooks)
        let client = server.client()
        let upload = try client.send(
            method: "POST", target: "/v0/b/\(bucket)/o?name=a.txt", headers: ["Content-Type": "text/plain"],
            body: Array("hello".utf8))
        #expect(upload.status == 200)
        // A read on the worker fills the store's cache of the live version.
        #expect(try client.send(method: "GET", target: "/v0/b/\(bucket)/o/a.txt").status == 200)
    }

    /// What the store holds in memory answers, without a store call; a store that keeps nothing in memory (the
    /// PostgreSQL store, shared by nodes) answers nothing inline.
    @Test func aCachedLiveVersionIsReadWithoutCallingTheStore() throws {
        let attempt = InlineAttempt()
        let inline = server.app.service.inlineView(attempt)
        attempt.begin()
        hooks.record()
        if let cached = server.metadata.cachedObject(bucket, name) {
            #expect(try inline.object(bucket, name, generation: nil) == cached)
            #expect(try inline.object(bucket, name, generation: cached.generation) == cached)
            #expect(!attempt.refused)
        } else {
            #expect(throws: (any Error).self) { try inline.object(bucket, name, generation: nil) }
            #expect(attempt.refused)
        }
        #expect(hooks.recorded().isEmpty)
    }

    @Test func whatIsNotInMemoryRefusesBeforeTheStore() throws {
        let attempt = InlineAttempt()
        let inline = server.app.service.inlineView(attempt)
        let missing = try ObjectName("missing.txt")
        let reads: [(String, () throws -> Void)] = [
            ("an object the cache does not hold", { _ = try inline.object(bucket, missing, generation: nil) }),
            ("another generation", { _ = try inline.object(bucket, name, generation: 1) }),
            ("the metadata store", { _ = try inline.metadata.bucket(bucket) }),
            ("the blob store", { _ = try inline.blobs.openReader(BlobID.random()) }),
            ("the HMAC keys", { _ = try inline.serviceAccounts.hmacKeys?.hmacKey(accessID: "GOOG1EXAMPLE") }),
        ]
        for (what, read) in reads {
            attempt.begin()
            hooks.record()
            #expect(throws: (any Error).self, "\(what)") { try read() }
            #expect(attempt.refused, "\(what)")
            #expect(hooks.recorded().isEmpty, "\(what)")
        }
    }

    @Test func theWorkersServiceCallsTheStore() throws {
        let service = server.app.service
        #expect(service.inlineAttempt == nil)
        hooks.record()
        _ = try service.object(bucket, try ObjectName("missing.txt"), generation: nil)
        #expect(hooks.recorded().map(\.method) == ["object"])
    }
}
