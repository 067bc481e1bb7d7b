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
}

extension BlobStore {
    public var readersSurviveDeletion: Bool { false }
}

public protocol BlobWriter: AnyObject {
    /// Bytes in the blob so far.
    var offset: Int64 { get }
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Makes everything written so far durable (fsync of data and, for a new blob, its directory entry).
    func sync() throws
    /// Releases the handle; idempotent, also done by deinit.
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

/// A blob store that can list every blob it holds, for orphan sweeps and consistency checks.
public protocol BlobListing {
    func allBlobIDs() throws -> [BlobID]
}
