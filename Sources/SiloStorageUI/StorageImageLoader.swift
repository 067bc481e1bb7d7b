public import Foundation
public import SiloStorage

/// Loads the bytes of images in Cloud Storage for display, as FirebaseUI's image loading does, over two caches:
/// memory (bounded by bytes, LRU) and disk (bounded by bytes, LRU, survives restarts). Both are keyed by bucket,
/// path, thumbnail transform and generation (see `ImageCacheKey`), so bytes of an overwritten generation are never
/// taken for the new one.
///
/// A load answers from memory or disk without a request while the entry is younger than
/// `revalidateAfter` (or, when the caller names a generation, while it is that generation). Otherwise it asks the
/// server with `If-None-Match` and the cached ETag: a 304 refreshes the entry without a download, a 200 replaces
/// it. Concurrent loads of the same image share one request; a caller whose Task is cancelled stops waiting at once,
/// and the request stops when the last caller has gone.
///
/// Errors are SiloStorage's `StorageError` (`.objectNotFound`, `.unauthorized`, `.downloadSizeExceeded`,
/// `.cancelled`, ...). The caches never fail a load: what cannot be written is not cached.
public final class StorageImageLoader: Sendable {
    /// The loader `sd_setImage` and `StorageImage` use unless given another.
    public static let shared = StorageImageLoader()

    public let configuration: StorageImageLoaderConfiguration
    let memory: MemoryImageCache
    let disk: DiskImageCache?
    let flights = ImageLoadFlights()

    public init(configuration: StorageImageLoaderConfiguration = StorageImageLoaderConfiguration()) {
        self.configuration = configuration
        memory = MemoryImageCache(capacity: configuration.memoryCapacity)
        disk = configuration.diskDirectory.flatMap {
            configuration.diskCapacity > 0 ? DiskImageCache(directory: $0, capacity: configuration.diskCapacity) : nil
        }
    }

    /// The bytes of the image at `reference`, or of its thumbnail when `transform` is given. Name the `generation`
    /// when you know it (from `StorageMetadata.generation`): a cached copy of it is then used at any age, and one of
    /// another generation never.
    public func load(
        _ reference: StorageReference, transform: StorageImageTransform? = nil, generation: Int64? = nil
    ) async throws -> StorageImageResult {
        let key = ImageCacheKey(
            bucket: reference.bucket, path: reference.fullPath, variant: transform?.description ?? "")
        if let entry = memory.entry(key),
            entry.isFresh(generation: generation, maxAge: configuration.revalidateAfter, now: Date())
        {
            return StorageImageResult(entry, source: .memory)
        }
        if Task.isCancelled { throw StorageError.cancelled }
        let flightKey = ImageLoadFlights.Key(cache: key, generation: generation)
        let member = flights.join(flightKey) { flight in
            Task {
                let outcome = await self.fetch(reference, key: key, transform: transform, generation: generation)
                self.flights.complete(flightKey, flight: flight, with: outcome)
            }
        }
        return try await flights.wait(flightKey, member: member)
    }

    /// `load(_:transform:generation:)`'s bytes.
    public func data(
        for reference: StorageReference, transform: StorageImageTransform? = nil, generation: Int64? = nil
    ) async throws -> Data {
        try await load(reference, transform: transform, generation: generation).data
    }

    /// Forgets the cached copies of `reference` (the original, or the thumbnail `transform`), in memory and on disk.
    public func removeCachedImage(for reference: StorageReference, transform: StorageImageTransform? = nil) async {
        let key = ImageCacheKey(
            bucket: reference.bucket, path: reference.fullPath, variant: transform?.description ?? "")
        memory.remove(key)
        await disk?.remove(key)
    }

    /// Empties the memory cache (for a memory warning); the disk cache stays.
    public func clearMemory() { memory.removeAll() }

    /// Bytes held in memory and on disk now.
    public var memoryBytes: Int { memory.totalBytes }
    public var diskBytes: Int {
        get async { await disk?.totalBytes ?? 0 }
    }

    /// One flight's work: memory again (an earlier flight may have filled it), disk, then the server.
    private func fetch(
        _ reference: StorageReference, key: ImageCacheKey, transform: StorageImageTransform?, generation: Int64?
    ) async -> ImageLoadFlights.Outcome {
        let maxAge = configuration.revalidateAfter
        var cached = memory.entry(key)
        if cached == nil, let disk, let entry = await disk.entry(key) {
            if entry.isFresh(generation: generation, maxAge: maxAge, now: Date()) {
                memory.store(entry)
                return .success(StorageImageResult(entry, source: .disk))
            }
            cached = entry
        }
        if let cached, cached.isFresh(generation: generation, maxAge: maxAge, now: Date()) {
            return .success(StorageImageResult(cached, source: .memory))
        }
        // Only an entry of the generation asked for (or of any, when none is named) may be revalidated.
        let validator = cached.flatMap { $0.matches(generation: generation) ? $0.etag : nil }
        let response: StorageMediaResponse
        do {
            response = try await reference.media(
                query: transform?.queryItems ?? [], ifNoneMatch: validator, maxSize: configuration.maxImageSize)
        } catch {
            return .failure(error)
        }
        var entry: ImageCacheEntry
        let source: StorageImageSource
        if response.notModified, let cached {
            entry = cached
            entry.validatedAt = Date()
            if let etag = response.etag { entry.etag = etag }
            if let generation = response.generation { entry.generation = generation }
            source = .revalidated
        } else {
            entry = ImageCacheEntry(
                key: key, generation: response.generation, etag: response.etag, contentType: response.contentType,
                validatedAt: Date(), data: response.data)
            source = .network
        }
        memory.store(entry)
        await disk?.store(entry)
        return .success(StorageImageResult(entry, source: source))
    }
}

extension StorageImageResult {
    init(_ entry: ImageCacheEntry, source: StorageImageSource) {
        self.init(data: entry.data, source: source, generation: entry.generation, contentType: entry.contentType)
    }
}
