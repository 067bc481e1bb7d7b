import Foundation
import SiloStorage
import SiloTestStores
import SiloTesting
import Synchronization

@testable import SiloStorageUI

/// A live Silo (SQLite + disk on a real socket) with a `Storage` pointed at it through a `GatedTransport`, and a
/// scratch directory for disk caches. The server's `RequestLog` is what shows whether a load made a request.
final class LiveImages {
    let server: TestServer
    let storage: Storage
    let gate: GatedTransport
    let scratch: URL

    init() throws {
        server = try TestServer()
        gate = GatedTransport(Storage.defaultTransport())
        storage = Storage(url: "gs://demo.appspot.com", transport: gate)
        storage.useEmulator(withHost: "127.0.0.1", port: server.port)
        scratch = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("silo-storage-ui-tests-\(UUID().uuidString)", isDirectory: true)
    }

    deinit {
        server.shutdown()
        try? FileManager.default.removeItem(at: scratch)
    }

    func reference(_ path: String) -> StorageReference { storage.reference().child(path) }

    /// A loader whose disk cache (unless `disk` is false) lives in `scratch/name`.
    func loader(
        disk: Bool = true, name: String = "cache", memory: Int = 1 << 20, diskCapacity: Int = 1 << 20,
        revalidateAfter: TimeInterval = 3600
    ) -> StorageImageLoader {
        StorageImageLoader(
            configuration: StorageImageLoaderConfiguration(
                memoryCapacity: memory, diskCapacity: diskCapacity,
                diskDirectory: disk ? scratch.appendingPathComponent(name, isDirectory: true) : nil,
                revalidateAfter: revalidateAfter))
    }

    /// The media GETs the server answered for `path` (every load that reached it).
    func mediaGETs(_ path: String) -> [RequestLog.Entry] {
        let encoded = path.replacingOccurrences(of: "/", with: "%2F")
        return server.requests.requests(pathSuffix: "/o/" + encoded).filter {
            $0.method == "GET" && $0.query.contains("alt=media")
        }
    }

    /// Bytes on disk under `scratch/name` (the disk cache's files).
    func diskUsage(_ name: String = "cache") -> Int {
        let dir = scratch.appendingPathComponent(name, isDirectory: true)
        let files = (try? FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: [.fileSizeKey]))
        return (files ?? []).reduce(0) { $0 + ((try? $1.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) }
    }
}

/// Passes requests to `inner`, except that while closed it holds each one before sending (so concurrent loads
/// overlap and cancellation can arrive mid-request, with no timing involved). A held request honours Task
/// cancellation as the transport contract asks: it throws `CancellationError` and is never sent. It also counts
/// the response-body bytes delivered.
final class GatedTransport: StorageTransport {
    private struct State {
        var open = true
        var held: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextID: UInt64 = 0
        var cancelledWhileHeld = 0
    }
    let inner: any StorageTransport
    private let state = Mutex(State())
    let bodyBytes = Atomic<Int>(0)

    init(_ inner: any StorageTransport) { self.inner = inner }

    func close() { state.withLock { $0.open = false } }

    func open() {
        let held = state.withLock { s in
            s.open = true
            defer { s.held = [:] }
            return Array(s.held.values)
        }
        for c in held { c.resume() }
    }

    var heldCount: Int { state.withLock { $0.held.count } }
    var cancelledWhileHeld: Int { state.withLock { $0.cancelledWhileHeld } }

    func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        let id = state.withLock {
            $0.nextID += 1
            return $0.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let proceed = state.withLock { s -> Bool in
                    if s.open { return true }
                    s.held[id] = c
                    return false
                }
                if proceed { c.resume() } else if Task.isCancelled { release(id) }
            }
        } onCancel: {
            release(id)
        }
        try await inner.stream(request, timeout: timeout, receiver: CountingReceiver(receiver, self), sent: sent)
    }

    private func release(_ id: UInt64) {
        let c = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            guard let c = s.held.removeValue(forKey: id) else { return nil }
            s.cancelledWhileHeld += 1
            return c
        }
        c?.resume(throwing: CancellationError())
    }
}

private final class CountingReceiver: StorageResponseReceiver {
    let inner: any StorageResponseReceiver
    let owner: GatedTransport
    init(_ inner: any StorageResponseReceiver, _ owner: GatedTransport) {
        self.inner = inner
        self.owner = owner
    }
    func receive(head: StorageHTTPResponseHead) throws { try inner.receive(head: head) }
    func receive(body chunk: Data) throws {
        owner.bodyBytes.add(chunk.count, ordering: .relaxed)
        try inner.receive(body: chunk)
    }
}

/// Deterministic bytes standing in for an image (the loader never decodes them), so a mismatch reproduces.
func imageBytes(_ count: Int, seed: UInt64) -> Data {
    var state = seed
    return Data(
        (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        })
}

/// Polls until `condition` holds or `seconds` pass (returns as soon as it holds; never a timing assert).
func eventually(_ seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
