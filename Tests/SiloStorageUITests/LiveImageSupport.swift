import Foundation
import SiloCore
import SiloImages
import SiloServer
import SiloServerKit
import SiloStorage
import SiloTestStores
import SiloTesting
import Synchronization

@testable import SiloStorageUI

/// A live Silo (SQLite + disk on a real socket) with a `Storage` pointed at it through a `GatedTransport`, and a
/// scratch directory for disk caches. The server's `RequestLog` is what shows whether a load made a request. Its
/// bucket serves thumbnails (libvips) of the sizes in ``thumbnailSizes``, as `silo serve --images` would.
final class LiveImages {
    static let thumbnailSizes = ["256x256", "64x64"]

    let server: TestServer
    let storage: Storage
    let gate: GatedTransport
    let scratch: URL

    init() throws {
        var configuration = ServerConfiguration()
        configuration.images.transformer = try VipsThumbnailer()
        configuration.images.buckets[try BucketName("demo.appspot.com")] = BucketImages(
            sizes: Set(try Self.thumbnailSizes.map { try ThumbnailSize($0) }), presets: [])
        server = try TestServer(configuration: configuration)
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

/// A real `width`×`height` 8-bit greyscale PNG (a diagonal ramp), for the loads the server transforms. Written
/// here with stored (uncompressed) deflate blocks, so the test needs no image tools.
func pngImage(width: Int, height: Int) -> Data {
    var raw: [UInt8] = []
    for y in 0..<height {
        raw.append(0)  // filter type None
        for x in 0..<width { raw.append(UInt8(truncatingIfNeeded: x + y)) }
    }
    var zlib: [UInt8] = [0x78, 0x01]
    var offset = 0
    repeat {
        let count = min(65_535, raw.count - offset)
        let last: UInt8 = offset + count == raw.count ? 1 : 0
        zlib += [last, UInt8(count & 0xff), UInt8(count >> 8), UInt8(~count & 0xff), UInt8((~count >> 8) & 0xff)]
        zlib += raw[offset..<offset + count]
        offset += count
    } while offset < raw.count
    var a: UInt32 = 1
    var b: UInt32 = 0
    for byte in raw {
        a = (a + UInt32(byte)) % 65_521
        b = (b + a) % 65_521
    }
    zlib += bigEndian((b << 16) | a)
    var png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
    func chunk(_ type: String, _ body: [UInt8]) {
        let typed = Array(type.utf8) + body
        png += bigEndian(UInt32(body.count)) + typed + bigEndian(crc32(typed))
    }
    chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, 0, 0, 0, 0])
    chunk("IDAT", zlib)
    chunk("IEND", [])
    return Data(png)
}

/// Width and height, as libvips reads them from an encoded image.
func dimensions(_ image: Data) throws -> [Int] {
    let header = try VipsThumbnailer().header(of: .bytes([UInt8](image)))
    return [header.width, header.height]
}

private func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
}

/// CRC-32 (IEEE 802.3, as PNG chunks carry it), bit by bit: the images here are small.
private func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xffff_ffff
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
    }
    return ~crc
}
