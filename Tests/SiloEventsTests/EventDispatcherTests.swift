import Foundation
import SiloCore
import SiloEpollHTTP
import SiloEvents
import SiloHTTP
import SiloHashing
import Synchronization
import Testing

/// A webhook on a real socket: records every request (its `ce-*` headers, signature and body) and answers with
/// the next scripted status (then 200).
private final class WebhookRecorder: HTTPHandler {
    struct Received: Sendable {
        var headers: [String: String]
        var body: [UInt8]
    }

    let received = Mutex<[Received]>([])
    let script = Mutex<[Int]>([])

    func begin(_ head: HTTPRequestHead) -> RequestDisposition {
        var headers: [String: String] = [:]
        for field in head.headers { headers[field.name.lowercased()] = field.value }
        return .readBody(Sink(headers: headers, recorder: self))
    }

    final class Sink: RequestBodySink {
        let headers: [String: String]
        let recorder: WebhookRecorder
        var body: [UInt8] = []

        init(headers: [String: String], recorder: WebhookRecorder) {
            self.headers = headers
            self.recorder = recorder
        }

        func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
            body += chunk
            return nil
        }

        func finish() -> HTTPResponse {
            let status = recorder.script.withLock { $0.isEmpty ? 200 : $0.removeFirst() }
            recorder.received.withLock { $0.append(Received(headers: headers, body: body)) }
            return HTTPResponse(status: status)
        }

        func abort() {}
        func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
    }

    /// Waits (bounded) until `predicate` holds for what arrived.
    func wait(until predicate: ([Received]) -> Bool) -> [Received] {
        for _ in 0..<600 {
            let now = received.withLock { $0 }
            if predicate(now) { return now }
            usleep(50_000)
        }
        return received.withLock { $0 }
    }
}

@Suite struct EventDispatcherTests {
    private let secret = Array("dispatcher-test-secret".utf8)

    private func serve(_ recorder: WebhookRecorder) throws -> EpollHTTPServer {
        var configuration = EpollHTTPServer.Configuration()
        configuration.port = 0
        configuration.threadCount = 1
        configuration.workerCount = 2
        return try EpollHTTPServer(handler: recorder, configuration: configuration, logger: Logger(label: "test"))
    }

    private func dispatcher(_ store: any MetadataStore, targets: [WebhookTarget]) -> EventDispatcher {
        var configuration = EventDispatcher.Configuration()
        configuration.targets = targets
        configuration.secret = secret
        configuration.concurrency = 2
        configuration.timeout = .seconds(5)
        configuration.pollInterval = .milliseconds(20)
        configuration.backoff = DeliveryBackoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        return EventDispatcher(
            store: store, configuration: configuration, logger: Logger(label: "test", handler: NullLogHandler()))
    }

    private func upload(
        _ store: any MetadataStore, _ bucket: String, _ name: String, at time: Timestamp = Timestamp.now()
    ) throws {
        let blob = BlobID.random()
        try store.registerPendingBlob(blob, at: time)
        _ = try store.insertObject(
            ObjectDraft(
                bucket: try BucketName(bucket), name: try ObjectName(name),
                blob: BlobSummary(size: 1, md5: Array(repeating: 0, count: 16), crc32c: 0), blobID: blob,
                fields: ObjectFields()),
            conditions: .none, at: time)
    }

    /// An event older than the retention window is not sent: it leaves the outbox and is counted as abandoned,
    /// while a fresh one goes out as usual.
    @Test func eventsPastTheRetentionWindowAreAbandoned() throws {
        let recorder = WebhookRecorder()
        let server = try serve(recorder)
        defer { server.shutdown(drainTimeout: 0) }
        let store = InMemoryMetadataStore(recordsEvents: true)
        let eightDaysAgo = Timestamp(microseconds: Timestamp.now().microseconds - 8 * 86_400 * 1_000_000)
        try upload(store, "b1", "stale", at: eightDaysAgo)
        try upload(store, "b1", "fresh")
        let events = dispatcher(store, targets: [WebhookTarget(url: "http://127.0.0.1:\(server.port)/hook")])
        events.start()
        defer { events.shutdown() }
        _ = recorder.wait { _ in (try? store.outboxStatus().pending) == 0 }
        #expect(try store.outboxStatus().pending == 0)
        #expect(recorder.received.withLock { $0 }.map { $0.headers["ce-subject"] } == ["objects/fresh"])
        let statistics = events.statistics()
        #expect(statistics.abandoned == 1 && statistics.delivered == 1 && statistics.failedAttempts == 0)
    }

    @Test func deliversSignedEventsOnceEachAndRetriesWithTheSameID() throws {
        let recorder = WebhookRecorder()
        let server = try serve(recorder)
        defer { server.shutdown(drainTimeout: 0) }
        let store = InMemoryMetadataStore(recordsEvents: true)
        // The first two attempts are refused (503, then 500).
        recorder.script.withLock { $0 = [503, 500] }
        let events = dispatcher(store, targets: [WebhookTarget(url: "http://127.0.0.1:\(server.port)/hook")])
        events.start()
        defer { events.shutdown() }
        for i in 0..<10 { try upload(store, "b1", "o\(i)") }

        // Ten events, two of them refused once and sent again: twelve requests.
        let got = recorder.wait { $0.count >= 12 }
        let ids = got.compactMap { $0.headers["ce-id"] }
        #expect(Set(ids).count == 10, "every event arrives")
        #expect(got.count == 12, "two refused attempts, sent again: \(ids)")
        for request in got {
            let mac = HMACSHA256.authenticationCode(key: secret, message: request.body)
            let hex = mac.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            #expect(request.headers["x-silo-signature"] == "sha256=" + hex)
            #expect(request.headers["ce-type"] == "google.cloud.storage.object.v1.finalized")
        }
        _ = recorder.wait { _ in events.statistics().delivered == 10 }
        #expect(try store.outboxStatus() == OutboxStatus(pending: 0, oldest: nil), "delivered events are done")
        let statistics = events.statistics()
        #expect(statistics.delivered == 10 && statistics.failedAttempts == 2 && statistics.pending == 0)
    }

    @Test func filtersChooseWhichWebhookGetsWhat() throws {
        let all = WebhookRecorder()
        let some = WebhookRecorder()
        let allServer = try serve(all)
        let someServer = try serve(some)
        defer {
            allServer.shutdown(drainTimeout: 0)
            someServer.shutdown(drainTimeout: 0)
        }
        let store = InMemoryMetadataStore(recordsEvents: true)
        let events = dispatcher(
            store,
            targets: [
                WebhookTarget(url: "http://127.0.0.1:\(allServer.port)/"),
                try WebhookTarget(parsing: "http://127.0.0.1:\(someServer.port)/;bucket=b2;types=delete"),
            ])
        events.start()
        defer { events.shutdown() }
        try upload(store, "b1", "x")
        try upload(store, "b2", "y")
        _ = try store.deleteObject(try BucketName("b2"), try ObjectName("y"), generation: nil, conditions: .none)
        try upload(store, "b1", "z")

        let everything = all.wait { $0.count == 4 }
        #expect(everything.count == 4)
        _ = all.wait { _ in (try? store.outboxStatus().pending) == 0 }
        let filtered = some.received.withLock { $0 }
        #expect(filtered.map { $0.headers["ce-subject"] } == ["objects/y"])
        #expect(filtered.map { $0.headers["ce-type"] } == ["google.cloud.storage.object.v1.deleted"])
    }
}
