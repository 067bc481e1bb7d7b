import SiloCore
import SiloHashing

/// Streams upload bytes into a new blob while computing size, MD5 and CRC32C in the same pass.
///
/// The blob is registered as pending *before* it is created, so a crash at any point leaves a blob the collector
/// knows about; nothing becomes visible until ``ObjectService/commitUpload`` runs.
final class BlobIngest {
    let blobID: BlobID
    private let service: ObjectService
    private var appender: BlobAppender?
    private var received: Int64 = 0
    /// A bound below the largest object, and what it bounds (an XML multipart upload's part).
    private let limit: (bytes: Int64, what: String)?

    init(service: ObjectService, time: Timestamp, limit: (bytes: Int64, what: String)? = nil) throws {
        self.service = service
        self.limit = limit
        self.blobID = BlobID.random()
        try service.metadata.registerPendingBlob(blobID, at: time)
        self.appender = BlobAppender(writer: try service.blobs.makeWriter(blobID, at: 0), hasher: ObjectHasher())
    }

    /// Bytes received so far.
    var size: Int64 { appender?.appended ?? received }

    /// The most bytes this upload takes: the largest object, or the lower bound it was made with.
    var maxBytes: Int64 { min(service.configuration.maxObjectSize, limit?.bytes ?? .max) }

    /// Where the next bytes may be placed before ``write(_:)`` takes them without a copy (``BlobAppender/freeSpace``);
    /// nil once the upload is closed.
    var freeSpace: UnsafeMutableRawBufferPointer? { appender?.freeSpace }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard let appender else { throw StorageError(.internalError, "write after the upload was closed") }
        // Refused before the bytes past the limit are written (a chunked body declares no length up front).
        let total = appender.appended + Int64(bytes.count)
        try service.checkObjectSize(total, "the upload")
        if let limit, total > limit.bytes {
            throw StorageError(
                .payloadTooLarge, "\(limit.what) would be \(total) bytes; at most \(limit.bytes) are accepted")
        }
        try appender.append(bytes)
    }

    /// Makes the bytes durable and returns what they are.
    func finish() throws -> BlobSummary {
        guard let appender else { throw StorageError(.internalError, "upload finished twice") }
        try appender.flush()
        try appender.writer.sync()
        appender.writer.close()
        received = appender.appended
        // Waits for the last batch's hashing.
        guard let hasher = appender.takeHasher() else { throw StorageError(.internalError, "upload lost its hashes") }
        self.appender = nil
        return hasher.finalize()
    }

    /// Throws the bytes away (failed or abandoned upload).
    func discard() {
        appender?.writer.close()
        appender = nil
        service.discardBlob(blobID)
    }
}
