/// Where object bytes live, addressed by server-made ``BlobID``s.
///
/// Writers and readers are single-owner objects used on one thread at a time; the store itself is thread-safe.
public protocol BlobStore: Sendable {
    /// Opens `id` for writing at `offset`. Offset 0 creates (or truncates) the blob; a larger offset continues a
    /// resumable upload, discarding anything past `offset` that a crash may have left.
    func makeWriter(_ id: BlobID, at offset: Int64) throws -> any BlobWriter
    /// Throws `.notFound` if the blob does not exist.
    func openReader(_ id: BlobID) throws -> any BlobReader
    /// Deletes the blob; a missing blob is not an error.
    func deleteBlob(_ id: BlobID) throws
    /// Whether a reader that opened a blob keeps reading it after `deleteBlob` (POSIX files do; S3 objects do
    /// not). When false, the server leaves replaced blobs to the collector's grace period instead of deleting
    /// them at once, so downloads of the previous version in flight finish.
    var readersSurviveDeletion: Bool { get }
    /// Makes `id` the concatenation of `sources`, in order, and durable as a writer's `sync()` makes it; a blob
    /// already named `id` is replaced. What composed objects are made of (JSON API compose, XML multipart uploads):
    /// a store that can copy inside itself does so, and says how it did. Throws `.notFound` for a missing source and
    /// `.corrupt` for one that does not hold exactly its slice's length.
    func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod
}

extension BlobStore {
    public var readersSurviveDeletion: Bool { false }

    /// The generic composition: every byte read back and written again through a bounded buffer.
    public func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod {
        try composeByStreaming(id, from: sources)
        return .streamed
    }

    /// Writes the concatenation of `sources` to `id` through a 256 KiB buffer, then syncs it. Stores whose own copy
    /// does not apply to some input (another filesystem, say) fall back to it.
    public func composeByStreaming(_ id: BlobID, from sources: [BlobSlice]) throws {
        let writer = try makeWriter(id, at: 0)
        defer { writer.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        for source in sources {
            let reader = try openReader(source.id)
            try source.check(size: reader.size)
            var offset: Int64 = 0
            while offset < source.length {
                let want = Int(min(Int64(buffer.count), source.length - offset))
                let n = try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
                guard n > 0 else {
                    throw StorageError(.corrupt, "blob \(source.id) ended at \(offset) of \(source.length)")
                }
                try writer.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                offset += Int64(n)
            }
        }
        try writer.sync()
    }
}

/// One source of a composition: a whole blob and the number of bytes the metadata says it holds.
public struct BlobSlice: Sendable, Equatable {
    public var id: BlobID
    public var length: Int64

    public init(_ id: BlobID, length: Int64) {
        self.id = id
        self.length = length
    }

    /// Throws `.corrupt` unless the stored blob holds exactly `length` bytes.
    public func check(size: Int64) throws {
        guard size == length else {
            throw StorageError(.corrupt, "blob \(id) holds \(size) bytes; its metadata says \(length)")
        }
    }
}

/// How a store made a composed blob: whether the bytes went through the server or stayed inside the store.
public enum BlobCompositionMethod: String, Sendable {
    /// Read back and written again through the server's memory: the generic way, and what a store must do when it
    /// cannot copy inside itself.
    case streamed
    /// Copied by the kernel (`copy_file_range`): no byte passes through user space, and on filesystems that share
    /// extents (XFS, Btrfs) no data block is written at all.
    case kernelCopy = "kernel-copy"
    /// Copied inside the object store (S3 CopyObject and UploadPartCopy): no byte passes through the server.
    case storeSide = "store-side-copy"
    /// The in-memory store joined its arrays.
    case inMemory = "in-memory"
}

public protocol BlobWriter: AnyObject {
    /// Bytes in the blob so far.
    var offset: Int64 { get }
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Makes everything written so far durable (fsync of data and, for a new blob, its directory entry).
    func sync() throws
    /// Releases the handle; idempotent, also done by deinit. Bytes written since the last `sync()` may be dropped
    /// (a store that buffers, like S3's, never publishes them late: a retry may already have rewritten that range),
    /// so a reader is sure to see only what was synced.
    func close()
}

public protocol BlobReader: AnyObject {
    var size: Int64 { get }
    /// Reads up to `buffer.count` bytes at `offset`; returns 0 at end of blob.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int
    /// Hands the caller an open file descriptor for zero-copy sending (sendfile), or nil when the blob is not a
    /// local file. After a non-nil return the caller owns and must close the descriptor.
    func takeFileDescriptor() -> Int32?
}

extension BlobReader {
    /// Fills all of `buffer` from `offset`; `.corrupt` when the blob ends first (it is shorter than its metadata).
    public func fill(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws {
        var filled = 0
        while filled < buffer.count {
            let n = try read(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), at: offset + Int64(filled))
            guard n > 0 else { throw StorageError(.corrupt, "blob is shorter than its metadata says") }
            filled += n
        }
    }

    /// `count` bytes from `offset` (callers bound `count`: a small object, a range of one).
    public func readBytes(_ count: Int, at offset: Int64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBytes { try fill($0, at: offset) }
        return bytes
    }
}

/// A blob store that can list every blob it holds, for orphan sweeps and consistency checks.
public protocol BlobListing {
    func allBlobIDs() throws -> [BlobID]
}
