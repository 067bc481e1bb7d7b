package import SiloCore
import SiloHashing

/// Streams upload bytes into a new blob while computing size, MD5 and CRC32C in the same pass.
///
/// Bytes that stay within the metadata store's ``MetadataStore/inlineBlobLimit`` are held in memory and committed
/// inline with their version (``InlineCandidateWriter``); a larger upload's blob is registered as pending *before*
/// it is created, so a crash at any point leaves a blob the collector knows about. Nothing becomes visible until
/// ``ObjectService/commitUpload`` runs.
package final class BlobIngest {
    private let service: ObjectService
    private var appender: BlobAppender?
    /// Set when the upload may stay inline: then the blob exists only once the bytes pass the limit.
    private let candidate: InlineCandidateWriter?
    /// The stored blob when there is no inline candidate: registered and opened from the start.
    private let registeredID: BlobID?
    /// The blob in the blob store, if the bytes went there: from the start, or since the candidate spilled.
    private var storedID: BlobID? { registeredID ?? candidate?.spilled?.id }
    private var received: Int64 = 0
    /// A bound below the largest object, and what it bounds (an XML multipart upload's part).
    private let limit: (bytes: Int64, what: String)?
    /// When the upload began: the time in an inline blob's id (``BlobID/inline(at:)``).
    private let time: Timestamp

    /// - Parameter inline: whether the bytes may stay in the metadata store; not for a blob that something other
    ///   than an object version will hold (an XML multipart upload's part).
    package init(
        service: ObjectService, time: Timestamp, limit: (bytes: Int64, what: String)? = nil, inline: Bool = true
    )
        throws
    {
        self.service = service
        self.limit = limit
        self.time = time
        let writer: any BlobWriter
        let inlineLimit = inline ? try service.metadata.inlineBlobLimit : 0
        if inlineLimit > 0 {
            let candidate = InlineCandidateWriter(limit: inlineLimit) {
                let id = try Self.register(service, time)
                return (id, try service.blobs.makeWriter(id, at: 0))
            }
            self.candidate = candidate
            registeredID = nil
            writer = candidate
        } else {
            candidate = nil
            let id = try Self.register(service, time)
            registeredID = id
            writer = try service.blobs.makeWriter(id, at: 0)
        }
        self.appender = BlobAppender(writer: writer, hasher: ObjectHasher())
    }

    private static func register(_ service: ObjectService, _ time: Timestamp) throws -> BlobID {
        let id = BlobID.random()
        try service.metadata.registerPendingBlob(id, at: time)
        return id
    }

    /// Bytes received so far.
    package var size: Int64 { appender?.appended ?? received }

    /// The most bytes this upload takes: the largest object, or the lower bound it was made with.
    var maxBytes: Int64 { min(service.configuration.maxObjectSize, limit?.bytes ?? .max) }

    /// Where the next bytes may be placed before ``write(_:)`` takes them without a copy (``BlobAppender/freeSpace``);
    /// nil once the upload is closed.
    var freeSpace: UnsafeMutableRawBufferPointer? { appender?.freeSpace }

    package func write(_ bytes: UnsafeRawBufferPointer) throws {
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

    /// Makes the bytes durable (or ready to commit inline) and returns what they are.
    package func finish() throws -> IngestedBlob {
        guard let appender else { throw StorageError(.internalError, "upload finished twice") }
        try appender.flush()
        try appender.writer.sync()
        appender.writer.close()
        received = appender.appended
        // Waits for the last batch's hashing.
        guard let hasher = appender.takeHasher() else { throw StorageError(.internalError, "upload lost its hashes") }
        self.appender = nil
        let summary = hasher.finalize()
        if let stored = storedID {
            return IngestedBlob(id: stored, summary: summary, inlineBytes: nil)
        }
        return IngestedBlob(id: .inline(at: time), summary: summary, inlineBytes: candidate?.inlineBytes ?? [])
    }

    /// Throws the bytes away (failed or abandoned upload).
    package func discard() {
        appender?.writer.close()
        appender = nil
        if let stored = storedID { service.discardBlob(stored) }
    }
}

/// What an upload leaves for its commit: the blob's id and what its bytes are, and the bytes themselves when they
/// are committed inline (``ObjectDraft/inlineBytes``).
package struct IngestedBlob {
    package var id: BlobID
    package var summary: BlobSummary
    package var inlineBytes: [UInt8]?
}
