import Foundation
import SiloTestStores
import SiloTesting
import Synchronization
import Testing

@testable import SiloStorage

/// A live Silo behind a `FaultInjectingTransport`, plus a clean `Storage` on the same server for seeding.
final class FaultyLive {
    let server: TestServer
    let faults: FaultInjectingTransport
    let storage: Storage
    let clean: Storage

    init(_ kind: RequestKind, failures: Int = .max, status: Int = 503, headers: [String: String] = [:]) throws {
        server = try TestServer(policy: DenyPrivate())
        faults = FaultInjectingTransport(
            testTransport(), kind: kind, failures: failures, status: status, headers: headers)
        storage = Storage(url: "gs://demo.appspot.com", transport: faults)
        storage.useEmulator(withHost: "127.0.0.1", port: server.port)
        clean = Storage(url: "gs://demo.appspot.com", transport: testTransport())
        clean.useEmulator(withHost: "127.0.0.1", port: server.port)
    }

    /// Uploads `data` at `path` through the clean instance.
    func seed(_ path: String, _ data: Data = Data("hello retry".utf8)) async throws {
        _ = try await clean.reference(withPath: path).putDataAsync(data)
    }

    deinit { server.shutdown() }
}

/// Retries against a live server with synthetic failures injected in front of it.
/// Only lower bounds on elapsed time are asserted: backoff is 1 s, 2 s, 4 s, … and `Retry-After` overrides it.
/// A hung transfer fails the test after the time limit instead of hanging the run.
@Suite(.timeLimit(.minutes(3))) struct RetryTests {
    @Test(arguments: [503, 408, 502, 504])
    func getMetadataRetriesTransientStatuses(status: Int) async throws {
        let live = try FaultyLive(.metadata, failures: 2, status: status)
        try await live.seed("public/a")
        let start = ContinuousClock.now
        let metadata = try await live.storage.reference(withPath: "public/a").getMetadata()
        #expect(metadata.size == 11)
        #expect(live.faults.attempts == 3)
        #expect(seconds(since: start) >= 3)  // 1 s + 2 s of backoff
    }

    @Test func retryAfterOverridesTheBackoff() async throws {
        // The default first delay is 1 s; Retry-After: 2 must make it at least 2 s.
        let live = try FaultyLive(.metadata, failures: 1, status: 503, headers: ["Retry-After": "2"])
        try await live.seed("public/a")
        let start = ContinuousClock.now
        _ = try await live.storage.reference(withPath: "public/a").getMetadata()
        #expect(live.faults.attempts == 2)
        #expect(seconds(since: start) >= 2)
    }

    @Test func retryAfterOneSecondOnADownload() async throws {
        let live = try FaultyLive(.media, failures: 1, status: 503, headers: ["Retry-After": "1"])
        try await live.seed("public/a")
        let start = ContinuousClock.now
        let data = try await live.storage.reference(withPath: "public/a").data(maxSize: 100)
        #expect(data == Data("hello retry".utf8))
        #expect(live.faults.attempts == 2)
        #expect(seconds(since: start) >= 1)
    }

    @Test(arguments: [503, 408])
    func getDataRetriesTransientStatuses(status: Int) async throws {
        let live = try FaultyLive(.media, failures: 2, status: status)
        let bytes = pattern(300 * 1024)
        try await live.seed("public/b", bytes)
        let start = ContinuousClock.now
        let data = try await live.storage.reference(withPath: "public/b").data(maxSize: 1 << 20)
        #expect(data == bytes)
        #expect(live.faults.attempts == 3)
        #expect(seconds(since: start) >= 3)
    }

    @Test(arguments: [RequestKind.uploadStart, .uploadChunk])
    func putDataRetriesTransientStatuses(kind: RequestKind) async throws {
        let live = try FaultyLive(kind, failures: 1, status: 503)
        let bytes = pattern(1000)
        let start = ContinuousClock.now
        let metadata = try await live.storage.reference(withPath: "public/c").putDataAsync(bytes)
        #expect(metadata.size == 1000)
        #expect(live.faults.attempts == 2)
        #expect(seconds(since: start) >= 1)
        #expect(try await live.clean.reference(withPath: "public/c").data(maxSize: 2000) == bytes)
    }

    @Test func operationBudgetExhaustedIsRetryLimitExceeded() async throws {
        let live = try FaultyLive(.metadata, status: 503)
        live.storage.maxOperationRetryTime = 2
        let start = ContinuousClock.now
        do {
            _ = try await live.storage.reference(withPath: "public/a").getMetadata()
            Issue.record("succeeded despite failures forever")
        } catch {
            #expect(StorageErrorCode(error) == .retryLimitExceeded)
            #expect((error as? StorageError)?.message == "Max retry time for operation exceeded, please try again.")
        }
        #expect(live.faults.attempts >= 2)  // at least one retry inside 2 s
        #expect(seconds(since: start) >= 1)
        #expect(seconds(since: start) < 30)  // generous: budget is 2 s
    }

    @Test func downloadBudgetExhaustedIsRetryLimitExceeded() async throws {
        let live = try FaultyLive(.media, status: 503)
        try await live.seed("public/a")
        live.storage.maxDownloadRetryTime = 2
        let start = ContinuousClock.now
        do {
            _ = try await live.storage.reference(withPath: "public/a").data(maxSize: 100)
            Issue.record("succeeded despite failures forever")
        } catch {
            #expect(StorageErrorCode(error) == .retryLimitExceeded)
        }
        #expect(live.faults.attempts >= 2)
        #expect(seconds(since: start) < 30)
    }

    @Test func uploadBudgetExhaustedIsRetryLimitExceeded() async throws {
        let live = try FaultyLive(.uploadChunk, status: 503)
        live.storage.maxUploadRetryTime = 2
        let start = ContinuousClock.now
        do {
            _ = try await live.storage.reference(withPath: "public/d").putDataAsync(pattern(1000))
            Issue.record("succeeded despite failures forever")
        } catch {
            #expect(StorageErrorCode(error) == .retryLimitExceeded)
        }
        #expect(live.faults.attempts >= 2)
        #expect(seconds(since: start) < 30)
    }

    /// Statuses Firebase does not retry (GTM retries only 408/502/503/504; 500 and 429 included) fail at once.
    @Test(arguments: [
        (400, StorageErrorCode.unknown), (403, .unauthorized), (404, .objectNotFound), (500, .unknown),
        (429, .unknown),
    ])
    func nonRetryableStatusesAreNotRetried(status: Int, code: StorageErrorCode) async throws {
        for kind in [RequestKind.metadata, .media] {
            let live = try FaultyLive(kind, status: status, headers: ["Retry-After": "1"])
            try await live.seed("public/a")
            let ref = live.storage.reference(withPath: "public/a")
            do {
                if kind == .metadata {
                    _ = try await ref.getMetadata()
                } else {
                    _ = try await ref.data(maxSize: 100)
                }
                Issue.record("\(status) succeeded")
            } catch {
                #expect(StorageErrorCode(error) == code, "\(kind) \(status): \(error)")
                #expect((error as? StorageError)?.serverError["ResponseErrorCode"] as? Int == status)
            }
            #expect(live.faults.attempts == 1, "\(kind) \(status)")
        }
        let upload = try FaultyLive(.uploadChunk, status: status)
        await #expect(throws: StorageError.self) {
            _ = try await upload.storage.reference(withPath: "public/e").putDataAsync(pattern(10))
        }
        #expect(upload.faults.attempts == 1, "upload \(status)")
    }
}
