import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTesting
import SiloWire
import Synchronization
import Testing

/// `beginInline`: a cache hit is answered on the caller's thread with no store call; anything else is nil, with no
/// store call either (the transport then runs `begin` on a worker). The objects are uploaded and warmed through a
/// real server on a socket; the inline answers are asked of the same application directly, as the transport asks.
@Suite struct InlineAnswerTests {
    /// Stores whose every call below the read cache is recorded: what the cache cannot answer reaches `hooks`.
    struct Stores {
        let hooks = StoreCallHooks()
        let server: TestServer

        /// `cached`: SQLite's arrangement, a read cache in front; without it, as PostgreSQL, every read is a call.
        init(cached: Bool, credentials: any CredentialVerifier = TokenVerifier.emulator) throws {
            let recorded = FaultInjectingMetadataStore(InMemoryMetadataStore(), hooks: hooks)
            let metadata: any MetadataStore = cached ? CachingMetadataStore(recorded) : recorded
            server = try TestServer(
                metadata: metadata, blobs: FaultInjectingBlobStore(InMemoryBlobStore(), hooks: hooks),
                credentials: credentials)
        }

        /// Runs `body` and returns the store calls it made.
        func calls(_ body: () throws -> Void) rethrows -> [StoreCall] {
            hooks.record()
            try body()
            return hooks.recorded()
        }

        func inline(_ target: String, method: String = "GET", headers: HTTPHeaders = [:]) -> HTTPResponse? {
            var all: HTTPHeaders = ["Host": "127.0.0.1:\(server.port)"]
            for field in headers { all.add(field.name, field.value) }
            guard
                case .answered(.respond(let response)) = server.app.makeInlineAnswerer()!.beginInline(
                    HTTPRequestHead(method: method, target: target, headers: all))
            else { return nil }
            return response
        }
    }

    static func bodyBytes(_ response: HTTPResponse) -> [UInt8]? {
        switch response.body {
        case .bytes(let bytes): bytes
        case .empty: []
        default: nil
        }
    }

    @Test func aCacheHitIsAnsweredInlineWithoutAStoreCall() throws {
        let stores = try Stores(cached: true)
        let client = stores.server.client()
        let content = pattern(3000)
        #expect(try client.mediaUpload("hot.bin", content).status == 200)
        // The first read through a worker fills both caches (and gives the object its download token).
        #expect(try client.send(method: "GET", target: objectPath("hot.bin") + "?alt=media").body == content)

        var media: HTTPResponse?
        var metadata: HTTPResponse?
        var gcsMedia: HTTPResponse?
        var ranged: HTTPResponse?
        let calls = stores.calls {
            media = stores.inline(objectPath("hot.bin") + "?alt=media")
            metadata = stores.inline(objectPath("hot.bin"))
            gcsMedia = stores.inline("/download/storage/v1/b/\(bucket)/o/hot.bin?alt=media")
            ranged = stores.inline(objectPath("hot.bin") + "?alt=media", headers: ["Range": "bytes=10-19"])
        }
        #expect(calls.isEmpty)
        let answer = try #require(media)
        #expect(answer.status == 200)
        #expect(Self.bodyBytes(answer) == content)
        let metadataBody = try #require(metadata.flatMap(Self.bodyBytes))
        let json = try #require(try JSONValue.parse(metadataBody).objectValue)
        #expect(json["name"]?.stringValue == "hot.bin")
        #expect(metadata?.status == 200)
        #expect(gcsMedia.flatMap(Self.bodyBytes) == content)
        #expect(ranged?.status == 206)
        #expect(ranged.flatMap(Self.bodyBytes) == Array(content[10...19]))
        // What the worker answers is what the inline answer was.
        #expect(try client.send(method: "GET", target: objectPath("hot.bin")).body == metadata.flatMap(Self.bodyBytes))
    }

    @Test func aMissGoesToAWorkerWithoutAStoreCall() throws {
        let stores = try Stores(cached: true)
        let client = stores.server.client()
        let content = pattern(2000, seed: 7)
        #expect(try client.mediaUpload("cold.bin", content).status == 200)
        #expect(try client.mediaUpload("half.bin", content).status == 200)
        // half.bin's record is cached by a metadata read, its bytes are not.
        #expect(try client.send(method: "GET", target: objectPath("half.bin")).status == 200)

        var answers: [HTTPResponse?] = []
        let calls = stores.calls {
            answers.append(stores.inline(objectPath("cold.bin") + "?alt=media"))
            answers.append(stores.inline(objectPath("cold.bin")))
            answers.append(stores.inline(objectPath("missing.bin")))
            answers.append(stores.inline(objectPath("half.bin") + "?alt=media"))
            // Not object reads: a listing, a write.
            answers.append(stores.inline(bucketPath()))
            answers.append(stores.inline(objectPath("half.bin"), method: "DELETE"))
        }
        #expect(calls.isEmpty)
        #expect(answers.allSatisfy { $0 == nil })
        // The worker answers what the inline path declined.
        #expect(try client.send(method: "GET", target: objectPath("half.bin") + "?alt=media").body == content)
    }

    /// An event loop keeps one answerer for every request: a refused attempt leaves nothing behind for the next.
    @Test func oneAnswererServesAttemptAfterAttempt() throws {
        let stores = try Stores(cached: true)
        let client = stores.server.client()
        let content = pattern(1500, seed: 3)
        #expect(try client.mediaUpload("warm.bin", content).status == 200)
        #expect(try client.send(method: "GET", target: objectPath("warm.bin") + "?alt=media").body == content)
        #expect(try client.mediaUpload("cold.bin", content).status == 200)
        let answerer = try #require(stores.server.app.makeInlineAnswerer())
        func inline(_ target: String) -> HTTPResponse? {
            let head = HTTPRequestHead(
                method: "GET", target: target, headers: ["Host": "127.0.0.1:\(stores.server.port)"])
            guard case .answered(.respond(let response)) = answerer.beginInline(head) else { return nil }
            return response
        }
        for _ in 0..<3 {
            #expect(inline(objectPath("cold.bin") + "?alt=media") == nil)
            #expect(inline(objectPath("warm.bin") + "?alt=media").flatMap(Self.bodyBytes) == content)
        }
    }

    /// Rules that cannot decide without waiting (here, because they may read documents) send the read to a worker,
    /// which decides it.
    @Test func aPolicyThatWouldWaitDeclinesTheAttempt() throws {
        let hooks = StoreCallHooks()
        let server = try TestServer(
            metadata: CachingMetadataStore(FaultInjectingMetadataStore(InMemoryMetadataStore(), hooks: hooks)),
            blobs: InMemoryBlobStore(), policy: WouldWait())
        let client = server.client()
        let content = pattern(500, seed: 5)
        #expect(try client.mediaUpload("ruled.bin", content).status == 200)
        #expect(try client.send(method: "GET", target: objectPath("ruled.bin") + "?alt=media").body == content)
        let head = HTTPRequestHead(
            method: "GET", target: objectPath("ruled.bin") + "?alt=media", headers: ["Host": "127.0.0.1:\(server.port)"]
        )
        guard case .deferred(let rest) = try #require(server.app.makeInlineAnswerer()).beginInline(head) else {
            Issue.record("answered on the loop although the policy could not answer without waiting")
            return
        }
        guard case .respond(let response) = rest.begin() else {
            Issue.record("no answer from the worker")
            return
        }
        #expect(response.status == 200)
    }

    private struct WouldWait: AccessPolicy {
        func allows(_ request: AccessRequest) -> Bool { true }
        func answerWithoutWaiting(_ request: AccessRequest) -> AccessAnswer? { nil }
    }

    @Test func theFirstV0ReadThatAssignsATokenIsLeftToAWorkerUnwritten() throws {
        let stores = try Stores(cached: true)
        let client = stores.server.client()
        // A GCS upload (into a bucket that exists: GCS makes none) gives the object no download token; a GCS read
        // caches its record.
        _ = try stores.server.metadata.ensureBucket(try BucketName(bucket))
        let upload = try client.send(
            method: "POST", target: "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=plain.txt",
            body: bytes("hello"))
        #expect(upload.status == 200)
        #expect(try client.send(method: "GET", target: "/storage/v1/b/\(bucket)/o/plain.txt").status == 200)

        var answer: HTTPResponse?
        let calls = stores.calls { answer = stores.inline(objectPath("plain.txt")) }
        #expect(answer == nil)
        #expect(calls.isEmpty)
        // Still no token: nothing was written. The worker's read then assigns one.
        let name = try ObjectName("plain.txt")
        let record = try #require(try stores.server.metadata.object(try BucketName(bucket), name, generation: nil))
        #expect(record.fields.downloadTokens.isEmpty)
        let json = try #require(
            try JSONValue.parse(try client.send(method: "GET", target: objectPath("plain.txt")).body).objectValue)
        #expect(json["downloadTokens"]?.stringValue?.isEmpty == false)
    }

    @Test func aStoreWithoutAReadCacheIsNeverAskedInline() throws {
        let stores = try Stores(cached: false)
        let client = stores.server.client()
        let content = pattern(1000, seed: 9)
        #expect(try client.mediaUpload("pg.bin", content).status == 200)
        #expect(try client.send(method: "GET", target: objectPath("pg.bin") + "?alt=media").body == content)
        #expect(try client.send(method: "GET", target: objectPath("pg.bin") + "?alt=media").body == content)

        var answers: [HTTPResponse?] = []
        let calls = stores.calls {
            answers.append(stores.inline(objectPath("pg.bin") + "?alt=media"))
            answers.append(stores.inline(objectPath("pg.bin")))
            answers.append(stores.inline("/storage/v1/b/\(bucket)/o/pg.bin"))
        }
        #expect(calls.isEmpty)
        #expect(answers.allSatisfy { $0 == nil })
    }

    /// The emulator's verifier, counting the credentials it is asked to verify.
    final class CountingVerifier: CredentialVerifier {
        private let calls = Atomic<Int>(0)
        var count: Int { calls.load(ordering: .relaxed) }
        func authenticate(authorizationHeader: String?, at time: Timestamp) throws -> Principal? {
            calls.add(1, ordering: .relaxed)
            return try TokenVerifier.emulator.authenticate(authorizationHeader: authorizationHeader, at: time)
        }
    }

    /// A request declined inline is routed and authenticated once, not again on the worker: the worker carries on
    /// from the route and principal the attempt established. Over a real socket, on a store with no read cache (as
    /// PostgreSQL), where every object read is declined after its credential was verified on the loop; and for a
    /// listing (declined before authentication), an upload (never tried inline) and a cache hit (answered inline).
    @Test(arguments: [false, true]) func theCredentialIsVerifiedOncePerRequest(cached: Bool) throws {
        let verifier = CountingVerifier()
        let stores = try Stores(cached: cached, credentials: verifier)
        let client = stores.server.client()
        let owner: HTTPHeaders = ["Authorization": "Bearer owner"]
        let content = pattern(1500, seed: 3)
        /// The response to `target`, and how many credentials were verified to give it.
        func verified(_ target: String, method: String = "GET", body: [UInt8] = []) throws -> (TestResponse, Int) {
            let before = verifier.count
            let response = try client.send(method: method, target: target, headers: owner, body: body)
            return (response, verifier.count - before)
        }
        let upload = try verified(bucketPath() + "?name=once.bin", method: "POST", body: content)
        #expect(upload.0.status == 200 && upload.1 == 1)
        // The first read writes the download token: on a worker either way. With a read cache the third is a hit.
        for _ in 0..<3 {
            let (read, verifications) = try verified(objectPath("once.bin") + "?alt=media")
            #expect(read.body == content)
            #expect(verifications == 1)
        }
        for target in [objectPath("once.bin"), "/storage/v1/b/\(bucket)/o/once.bin", bucketPath()] {
            let (response, verifications) = try verified(target)
            #expect(response.status == 200, "\(target)")
            #expect(verifications == 1, "\(target)")
        }
    }
}
