import Foundation
import SiloCore
import SiloStorage
import SiloTestStores
import SiloTesting
import Synchronization

/// A live Silo (SQLite + disk, real socket on 127.0.0.1) and a `Storage` pointed at it with `useEmulator`.
/// Paths under `private/` are denied, to produce 403s.
final class Live {
    let server: TestServer
    let storage: Storage
    let recorder: RecordingTransport

    init(chunkSize: Int64? = nil, idToken: Storage.IDTokenProvider? = nil) throws {
        server = try TestServer(policy: DenyPrivate())
        recorder = RecordingTransport(testTransport())
        storage = Storage(url: "gs://demo.appspot.com", idTokenProvider: idToken, transport: recorder)
        storage.useEmulator(withHost: "127.0.0.1", port: server.port)
        if let chunkSize { storage.uploadChunkSizeBytes = chunkSize }
    }

    deinit { server.shutdown() }
}

/// The transport under test: the platform default (libcurl on Linux), or URLSession with
/// `SILO_STORAGE_TEST_TRANSPORT=urlsession swift test --filter SiloStorageTests`.
func testTransport() -> any StorageTransport {
    switch ProcessInfo.processInfo.environment["SILO_STORAGE_TEST_TRANSPORT"] {
    case "urlsession": URLSessionStorageTransport()
    case nil, "", "default": Storage.defaultTransport()
    case let other?: fatalError("SILO_STORAGE_TEST_TRANSPORT=\(other): expected urlsession or default")
    }
}

struct DenyPrivate: AccessPolicy {
    func allows(_ request: AccessRequest) -> Bool { !request.path.hasPrefix("private") }
}

/// Wraps a transport, remembering each request's method, URL and headers, and optionally delaying each request.
final class RecordingTransport: StorageTransport {
    struct Entry: Sendable {
        var method: String
        var url: URL
        var headers: [String: String]
    }
    let inner: any StorageTransport
    let entries = Mutex<[Entry]>([])
    let delay = Mutex<Duration>(.zero)

    init(_ inner: any StorageTransport) { self.inner = inner }

    func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        entries.withLock { $0.append(Entry(method: request.method, url: request.url, headers: request.headers)) }
        let wait = delay.withLock { $0 }
        if wait > .zero { try await Task.sleep(for: wait) }
        try await inner.stream(request, timeout: timeout, receiver: receiver, sent: sent)
    }

    var requests: [Entry] { entries.withLock { $0 } }
}

/// Collects values from callbacks on other threads.
final class Recorder<T: Sendable>: Sendable {
    private let items = Mutex<[T]>([])
    func add(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
}

/// Deterministic bytes, so a mismatch reproduces.
func pattern(_ count: Int, seed: UInt64 = 7) -> Data {
    var state = seed
    var out = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        out[i] = UInt8(truncatingIfNeeded: state >> 33)
    }
    return Data(out)
}

func temporaryFile(_ name: String = UUID().uuidString) -> URL {
    URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("silo-sdk-tests").appendingPathComponent(name)
}

/// Waits for a task to finish, returning its terminal snapshot.
func finish(_ task: StorageObservableTask) async -> StorageTaskSnapshot {
    await withCheckedContinuation { (c: CheckedContinuation<StorageTaskSnapshot, Never>) in
        let once = Mutex(false)
        let resume: @Sendable (StorageTaskSnapshot) -> Void = { snapshot in
            if once.withLock({
                let was = $0
                $0 = true
                return !was
            }) {
                c.resume(returning: snapshot)
            }
        }
        task.observe(.success, handler: resume)
        task.observe(.failure, handler: resume)
        // A cancelled task does not replay `.failure`; its snapshot already says so.
        let now = task.snapshot
        if now.status == .failure { resume(now) }
    }
}
