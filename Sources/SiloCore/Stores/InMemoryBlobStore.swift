import Synchronization

/// The reference ``BlobStore``: blobs are byte arrays in a `Mutex`-guarded dictionary.
///
/// Writers write straight into the shared dictionary (there is no page cache to flush), so `sync()` does nothing.
public final class InMemoryBlobStore: BlobStore, BlobListing {
    private let blobs = Mutex([BlobID: [UInt8]]())

    public init() {}

    public func makeWriter(_ id: BlobID, at offset: Int64) throws -> any BlobWriter {
        guard offset >= 0 else { throw StorageError(.invalidArgument, "negative offset \(offset) for blob \(id)") }
        try blobs.withLock { blobs in
            if offset == 0 {
                blobs[id] = []
                return
            }
            guard let existing = blobs[id] else {
                throw StorageError(.corrupt, "blob \(id) is missing; cannot continue writing at offset \(offset)")
            }
            guard existing.count >= offset else {
                throw StorageError(
                    .corrupt, "blob \(id) holds \(existing.count) bytes; cannot continue writing at offset \(offset)")
            }
            blobs[id]!.removeSubrange(Int(offset)...)
        }
        return Writer(store: self, id: id, offset: offset)
    }

    public func openReader(_ id: BlobID) throws -> any BlobReader {
        guard let bytes = blobs.withLock({ $0[id] }) else {
            throw StorageError(.notFound, "blob \(id) does not exist")
        }
        return BytesBlobReader(bytes)
    }

    public func deleteBlob(_ id: BlobID) throws {
        blobs.withLock { _ = $0.removeValue(forKey: id) }
    }

    public func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod {
        try blobs.withLock { blobs in
            var joined: [UInt8] = []
            joined.reserveCapacity(Int(sources.reduce(0) { $0 + $1.length }))
            for source in sources {
                guard let bytes = blobs[source.id] else {
                    throw StorageError(.notFound, "blob \(source.id) does not exist")
                }
                try source.check(size: Int64(bytes.count))
                joined += bytes
            }
            blobs[id] = joined
        }
        return .inMemory
    }

    /// Every blob in the store, for orphan sweeps (mirrors `DiskBlobStore.allBlobIDs()`).
    public func allBlobIDs() throws -> [BlobID] {
        blobs.withLock { Array($0.keys) }.sorted { $0.rawValue < $1.rawValue }
    }

    private final class Writer: BlobWriter {
        private let store: InMemoryBlobStore
        private let id: BlobID
        private(set) var offset: Int64
        private var closed = false

        init(store: InMemoryBlobStore, id: BlobID, offset: Int64) {
            self.store = store
            self.id = id
            self.offset = offset
        }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            guard !closed else { throw StorageError(.internalError, "write to closed writer of blob \(id)") }
            let chunk = Array(bytes.bindMemory(to: UInt8.self))
            try store.blobs.withLock { blobs in
                // A blob deleted under a writer (reset, garbage sweep) must not come back to life.
                guard blobs[id] != nil else { throw StorageError(.notFound, "blob \(id) was deleted while writing") }
                blobs[id]!.append(contentsOf: chunk)
            }
            offset += Int64(chunk.count)
        }

        func sync() throws {
            guard !closed else { throw StorageError(.internalError, "sync of closed writer of blob \(id)") }
        }

        func close() { closed = true }
    }
}
