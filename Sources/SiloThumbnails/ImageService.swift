import Dispatch
package import SiloCore
package import SiloHTTP
package import SiloServerKit
import Synchronization

/// Makes thumbnails for the routes and the presets: the disk cache first, then a transform under the concurrency
/// bound. Called on workers only (``ThumbnailQuery`` declines inline attempts).
package final class ImageService: ThumbnailService {
    let settings: ImageSettings
    let cache: ThumbnailCache?
    /// The most recently served results in memory, so a hot thumbnail is answered on the event loop like a small
    /// download (``ThumbnailResponder``): what the disk cache holds, bounded separately.
    let hot: BoundedCache<ThumbnailCache.Key, Hot>

    /// A result in memory with the answer's headers formatted once (they depend on the version and, through
    /// `Cache-Control`, on its metageneration, which is kept to check).
    struct Hot: Sendable {
        let bytes: [UInt8]
        let etag: String
        let headers: HTTPHeaders
        let metageneration: Int64
    }
    private let slots: DispatchSemaphore
    /// The transforms in progress, by result: a miss that finds its key here waits for that transform instead of
    /// making the same thumbnail again (a page of 200 photos asked for by several clients at once).
    private let flights = Mutex<[ThumbnailCache.Key: Flight]>([:])
    private let transformCount = Atomic<Int>(0)
    private let hitCount = Atomic<Int>(0)
    private let sharedCount = Atomic<Int>(0)
    private let waitingCount = Atomic<Int>(0)
    /// Preset jobs run here, one at a time, after the upload that queued them has answered.
    let presetQueue = DispatchQueue(label: "silo.thumbnail-presets")
    let pendingPresets = Atomic<Int>(0)
    let presetWrites = Atomic<Int>(0)
    /// Uploads that got no preset job because `maxPendingPresetJobs` were waiting.
    let droppedPresets = Atomic<Int>(0)
    /// The saved jobs (`presetJobDirectory`); nil keeps them in memory only.
    let presetJobs: PresetJobFiles?
    /// Whether the jobs the previous run left were queued (once per process).
    let resumedPresets = Atomic<Bool>(false)

    package init(settings: ImageSettings, logger: Logger) {
        self.settings = settings
        slots = DispatchSemaphore(value: max(1, settings.maxConcurrentTransforms))
        var cache: ThumbnailCache?
        if settings.transformer != nil, let directory = settings.cacheDirectory, settings.cacheBytes > 0 {
            do {
                cache = try ThumbnailCache(directory: directory, maxBytes: settings.cacheBytes)
            } catch {
                logger.error("thumbnail cache disabled", metadata: ["silo.error": "\(error)"])
            }
        }
        self.cache = cache
        var jobs: PresetJobFiles?
        if settings.transformer != nil, let directory = settings.presetJobDirectory {
            do {
                jobs = try PresetJobFiles(directory: directory, logger: logger)
            } catch {
                logger.error("preset jobs kept in memory only", metadata: ["silo.error": "\(error)"])
            }
        }
        presetJobs = jobs
        hot = BoundedCache(
            capacity: cache == nil ? 0 : 4096,
            maxBytes: Int(min(Int64(settings.memoryCacheBytes), settings.cacheBytes)),
            cost: { _, hot in hot.bytes.count + 512 })
    }

    static func key(_ record: ObjectRecord, _ spec: ThumbnailSpec) -> ThumbnailCache.Key {
        ThumbnailCache.Key(bucket: record.bucket, name: record.name, generation: record.generation, spec: spec)
    }

    /// A result held in memory: no I/O, so the inline attempt may serve it (`waiting: false`: a held lock is a miss).
    func memoryHit(_ record: ObjectRecord, _ spec: ThumbnailSpec, waiting: Bool) -> Hot? {
        guard let entry = hot.value(for: Self.key(record, spec), waiting: waiting),
            entry.metageneration == record.metageneration
        else { return nil }
        hitCount.add(1, ordering: .relaxed)
        return entry
    }

    /// The length of a result the disk cache holds, from its index: no I/O (a HEAD's answer, on the event loop too).
    /// `waiting: false`: a lock another thread holds throws ``ThumbnailCache/Busy``.
    func cachedLength(_ record: ObjectRecord, _ spec: ThumbnailSpec, waiting: Bool) throws(ThumbnailCache.Busy)
        -> Int64?
    {
        guard let length = try cache?.length(Self.key(record, spec), waiting: waiting) else { return nil }
        hitCount.add(1, ordering: .relaxed)
        return length
    }

    /// Transforms made, answers served from the cache, misses answered by another request's transform, misses
    /// waiting for one now, and the preset jobs' and the disk cache's figures.
    package var counters: ThumbnailCounters {
        var counters = ThumbnailCounters()
        counters.transforms = transformCount.load(ordering: .relaxed)
        counters.cacheHits = hitCount.load(ordering: .relaxed)
        counters.shared = sharedCount.load(ordering: .relaxed)
        counters.waiting = waitingCount.load(ordering: .relaxed)
        counters.presetWrites = presetWrites.load(ordering: .relaxed)
        counters.presetsPending = pendingPresets.load(ordering: .relaxed)
        counters.presetsDropped = droppedPresets.load(ordering: .relaxed)
        counters.cachedBytes = cache?.heldBytes ?? 0
        return counters
    }

    package func respond(
        _ record: ObjectRecord, _ spec: ThumbnailSpec, request: HTTPRequestHead, service: ObjectService
    ) throws -> HTTPResponse {
        try ThumbnailResponder(service: service, images: self).respond(record, spec, request: request)
    }

    package func drainPresets() { presetQueue.sync {} }

    /// The thumbnail of `record` (from the disk cache or made now), and whether it came from the cache; `hot`
    /// makes the entry kept in memory from the bytes.
    func thumbnail(
        _ record: ObjectRecord, _ spec: ThumbnailSpec, blobs: any BlobStore, hot makeHot: ([UInt8]) -> Hot
    ) throws -> (bytes: [UInt8], cached: Bool) {
        let key = Self.key(record, spec)
        if let bytes = cache?.bytes(key) {
            hitCount.add(1, ordering: .relaxed)
            hot.insert(makeHot(bytes), for: key)
            return (bytes, true)
        }
        let (flight, leads) = flights.withLock { flights in
            if let running = flights[key] { return (running, false) }
            let started = Flight()
            flights[key] = started
            return (started, true)
        }
        guard leads else {
            // The leader's own bound (a free slot, then the transform's time limit), with a second's margin.
            let bound = settings.queueSeconds + settings.limits.maxSeconds + 1
            waitingCount.add(1, ordering: .relaxed)
            let finished = flight.wait(until: .now() + bound)
            waitingCount.subtract(1, ordering: .relaxed)
            guard let outcome = finished else {
                throw StorageError(.unavailable, "\(record.bucket)/\(record.name): the thumbnail is still being made")
            }
            sharedCount.add(1, ordering: .relaxed)
            return (try outcome.get(), false)
        }
        let outcome = Result { try transform(record, spec, blobs: blobs) }.mapError(StorageError.wrap)
        if case .success(let bytes) = outcome {
            cache?.insert(bytes, for: key)
            hot.insert(makeHot(bytes), for: key)
        }
        // Out of the table once the result is findable in the caches, so no later miss starts it again.
        flights.withLock { _ = $0.removeValue(forKey: key) }
        flight.finish(outcome)
        return (try outcome.get(), false)
    }

    /// One transform of the original's bytes, waiting for a free slot first (503 when none frees in time).
    func transform(_ record: ObjectRecord, _ spec: ThumbnailSpec, blobs: any BlobStore) throws -> [UInt8] {
        guard let transformer = settings.transformer else {
            throw StorageError(.invalidArgument, "this server makes no thumbnails")
        }
        guard slots.wait(timeout: .now() + settings.queueSeconds) == .success else {
            throw StorageError(.unavailable, "too many thumbnails are being made; try again")
        }
        defer { slots.signal() }
        let reader = try blobs.openBytes(of: record)
        let source: ImageSource
        // Closed when this returns; libvips reads a duplicate of it.
        var owner: OwnedFileDescriptor?
        if let fd = reader.takeFileDescriptor() {
            owner = OwnedFileDescriptor(fd)
            source = .fileDescriptor(fd)
        } else {
            guard record.size <= settings.maxInputBytes else {
                throw StorageError(
                    .invalidArgument,
                    "\(record.bucket)/\(record.name) is \(record.size) bytes; thumbnails are made of images up to \(settings.maxInputBytes)"
                )
            }
            source = .bytes(try reader.readBytes(Int(record.size), at: 0))
        }
        transformCount.add(1, ordering: .relaxed)
        do {
            return try withExtendedLifetime(owner) {
                try transformer.thumbnail(of: source, spec, limits: settings.limits)
            }
        } catch let error as StorageError {
            var named = error
            named.message = "\(record.bucket)/\(record.name): \(error.message)"
            throw named
        }
    }

}

/// One transform in progress and its outcome, for the misses that wait on it (any number: a group, not a semaphore,
/// releases them all).
private final class Flight: Sendable {
    private let done = DispatchGroup()
    private let outcome = Mutex<Result<[UInt8], StorageError>?>(nil)

    init() { done.enter() }

    func finish(_ result: Result<[UInt8], StorageError>) {
        outcome.withLock { $0 = result }
        done.leave()
    }

    /// Nil if it did not finish by `deadline`.
    func wait(until deadline: DispatchTime) -> Result<[UInt8], StorageError>? {
        guard done.wait(timeout: deadline) == .success else { return nil }
        return outcome.withLock { $0 }
    }
}
