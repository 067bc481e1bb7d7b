import Foundation
import SiloCore
import SiloHTTP
import SiloImages
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Synchronization

let bucket = "demo.appspot.com"
let admin: HTTPHeaders = ["Authorization": "Bearer owner"]

func objectPath(_ name: String, bucket: String = bucket) -> String {
    "/v0/b/\(bucket)/o/" + PercentCoding.encodeComponent(name)
}

/// A live server whose bucket `demo.appspot.com` serves thumbnails with libvips, and the directory of its result
/// cache and saved preset jobs (removed with the last harness that uses it).
final class ThumbnailHarness {
    let server: TestServer
    let cache: TemporaryDirectory

    init(server: TestServer, cache: TemporaryDirectory) {
        self.server = server
        self.cache = cache
    }

    var app: SiloServerApp { server.app }
    func client() -> HTTPTestClient { server.client() }

    /// The preset job files saved and not yet deleted.
    var presetJobFiles: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cache.path + "/preset-jobs")) ?? []).filter {
            $0.hasSuffix(".job")
        }.sorted()
    }
}

func thumbnailServer(
    _ transport: TestServer.Transport = .socket, backend: TestServer.Backend = .embedded,
    policy: any AccessPolicy = AllowAllPolicy(), sizes: [String] = ["120x80", "64x64", "256x256"],
    presets: [ThumbnailPreset] = [], cacheBytes: Int64 = 16 << 20, memoryCacheBytes: Int = 16 << 20,
    maxSeconds: Double = 10, maxDecodeBytes: Int64? = nil, cachingMetadata: Bool = false,
    transformer: (any ImageTransformer)? = nil,
    recordsEvents: Bool = false, maxPendingPresetJobs: Int = 256, restarting earlier: ThumbnailHarness? = nil
) throws -> ThumbnailHarness {
    let cache = try earlier?.cache ?? TemporaryDirectory()
    var configuration = ServerConfiguration()
    configuration.images.transformer = try transformer ?? VipsThumbnailer()
    configuration.images.cacheDirectory = cache.path + "/thumbs"
    configuration.images.presetJobDirectory = cache.path + "/preset-jobs"
    configuration.images.maxPendingPresetJobs = maxPendingPresetJobs
    configuration.images.cacheBytes = cacheBytes
    configuration.images.memoryCacheBytes = memoryCacheBytes
    configuration.images.limits.maxSeconds = maxSeconds
    if let maxDecodeBytes { configuration.images.limits.maxDecodeBytes = maxDecodeBytes }
    configuration.images.buckets[try BucketName(bucket)] = BucketImages(
        sizes: Set(try sizes.map { try ThumbnailSize($0) }), presets: presets)
    // With `cachingMetadata`, the stores `silo serve` answers inline from (live versions held in memory); with
    // `recordsEvents`, a store whose outbox the test reads.
    let server: TestServer
    if let earlier {
        // A restart: the same stores and directories as before.
        server = try TestServer(
            transport, metadata: earlier.server.metadata, blobs: earlier.server.blobs, configuration: configuration,
            policy: policy)
    } else if recordsEvents || cachingMetadata {
        let memory = InMemoryMetadataStore(recordsEvents: recordsEvents)
        server = try TestServer(
            transport, metadata: cachingMetadata ? CachingMetadataStore(memory) : memory, blobs: InMemoryBlobStore(),
            configuration: configuration, policy: policy)
    } else {
        server = try TestServer(transport, backend: backend, configuration: configuration, policy: policy)
    }
    return ThumbnailHarness(server: server, cache: cache)
}

extension HTTPTestClient {
    /// A v0 media upload as the admin (rules do not apply).
    @discardableResult
    func upload(_ name: String, _ body: [UInt8], contentType: String = "image/jpeg") throws -> TestResponse {
        var headers = admin
        headers.set("Content-Type", contentType)
        return try send(
            method: "POST", target: "/v0/b/\(bucket)/o?name=" + PercentCoding.encodeComponent(name), headers: headers,
            body: body)
    }

    func thumbnail(_ name: String, _ query: String, headers: HTTPHeaders = [:]) throws -> TestResponse {
        try send(method: "GET", target: objectPath(name) + "?alt=media&" + query, headers: headers)
    }
}

/// libvips behind a gate: each transform waits until the gate opens, and the gate counts the transforms that reached
/// it. A test holds one transform mid-way this way, with no timing involved.
final class GatedTransformer: ImageTransformer {
    let inner = try! VipsThumbnailer()
    private let gate = DispatchSemaphore(value: 0)
    let arrived = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    func header(of source: ImageSource) throws -> ImageHeader { try inner.header(of: source) }

    func thumbnail(of source: ImageSource, _ spec: ThumbnailSpec, limits: ImageLimits) throws -> [UInt8] {
        arrived.add(1, ordering: .relaxed)
        gate.wait()
        if stopped.load(ordering: .relaxed) { throw StorageError(.unavailable, "the server was stopped") }
        return try inner.thumbnail(of: source, spec, limits: limits)
    }

    /// Lets `count` transforms (waiting or still to come) through.
    func open(_ count: Int = 1) { for _ in 0..<count { gate.signal() } }

    /// Fails every transform held or still to come: a server "crashed" in one goes on no further (its thread is
    /// released only so that the test ends clean).
    func stop() {
        stopped.store(true, ordering: .relaxed)
        open(64)
    }
}
