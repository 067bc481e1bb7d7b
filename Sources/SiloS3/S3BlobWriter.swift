import Foundation
import SiloCore
import SiloCurl
import SiloS3Signer
import SiloWire

/// Writes one blob as segments (see ``S3BlobStore``): buffers up to one part, streams full parts into a multipart
/// upload, and publishes the current segment on `sync()` only. `close()` drops what was not synced: a request that
/// failed or was aborted closes its writer only when its answer is on its way, perhaps after the client's retry
/// wrote the same segment key through a newer writer, so publishing then could replace acknowledged bytes with
/// stale ones (and break the object's checksums).
final class S3BlobWriter: BlobWriter {
    private let store: S3BlobStore
    private let id: BlobID
    private(set) var offset: Int64
    /// Blob offset of the segment being written.
    private var segmentStart: Int64
    /// Bytes of the current segment not yet sent; never more than one part.
    private var buffer = Data()
    /// The multipart upload of the current segment once its first part went out.
    private var upload: (id: String, key: String, etags: [String])?
    private var closed = false
    /// After a failed S3 call the segment's state is unknown; the writer refuses further use.
    private var failure: StorageError?
    /// Largest buffer held so far, for tests of the memory bound.
    private(set) var peakBufferedBytes = 0
    /// Multipart parts sent so far, for tests of the multipart threshold.
    private(set) var partsSent = 0

    init(store: S3BlobStore, id: BlobID, offset: Int64) {
        self.store = store
        self.id = id
        self.offset = offset
        self.segmentStart = offset
    }

    deinit { close() }

    private var partSize: Int { store.configuration.partSize }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        try checkUsable("write to")
        var rest = bytes
        while !rest.isEmpty {
            if buffer.isEmpty { buffer.reserveCapacity(partSize) }
            let take = min(rest.count, partSize - buffer.count)
            buffer.append(rest.baseAddress!.assumingMemoryBound(to: UInt8.self), count: take)
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            offset += Int64(take)
            peakBufferedBytes = max(peakBufferedBytes, buffer.count)
            if buffer.count == partSize { try guarded { () throws(S3Error) in try sendPart() } }
        }
    }

    func sync() throws {
        try checkUsable("sync of")
        try guarded { () throws(S3Error) in try publish() }
    }

    func close() {
        guard !closed else { return }
        closed = true
        // Unsynced bytes were never acknowledged; the next writer truncates to the acknowledged offset anyway.
        abandonUpload()
        buffer = Data()
    }

    /// Drops the writer as a crashed node would: nothing unpublished is sent, no upload is aborted.
    func abandonForTesting() {
        closed = true
        upload = nil
        buffer = Data()
    }

    // MARK: Segment publishing

    private func checkUsable(_ action: String) throws {
        guard !closed else { throw StorageError(.internalError, "\(action) closed writer of blob \(id)") }
        if let failure { throw failure }
    }

    private func guarded(_ body: () throws(S3Error) -> Void) throws {
        do {
            try body()
        } catch {
            failure = error.storageError
            throw error.storageError
        }
    }

    /// Makes the current segment an object: one PUT if it fits in a part, else the last part and the completion.
    private func publish() throws(S3Error) {
        let key = store.layout.segmentKey(id, start: segmentStart)
        if upload != nil {
            if !buffer.isEmpty { try sendPart() }
            if let upload {
                try store.completeMultipartUpload(
                    upload.key, uploadID: upload.id, etags: upload.etags, size: offset - segmentStart)
            }
            upload = nil
        } else if !buffer.isEmpty {
            try store.putObject(key, body: buffer, summary: "blob \(id) segment")
        }
        buffer.removeAll(keepingCapacity: true)
        segmentStart = offset
    }

    /// Sends the buffer as the next part, starting the multipart upload first if needed.
    private func sendPart() throws(S3Error) {
        if upload == nil {
            let key = store.layout.segmentKey(id, start: segmentStart)
            upload = (try store.startMultipartUpload(key), key, [])
        }
        guard let current = upload else { return }
        let number = current.etags.count + 1
        let reply = try store.client.send(
            S3Operation(
                method: "PUT", key: current.key,
                query: [SigV4QueryItem("partNumber", String(number)), SigV4QueryItem("uploadId", current.id)],
                body: buffer, summary: "upload part \(number) of \(current.key)"))
        guard let etag = reply.head.header("ETag"), !etag.isEmpty else {
            throw S3Error(.invalidResponse, "upload part \(number) of \(current.key): no ETag in the reply")
        }
        upload?.etags.append(etag)
        partsSent += 1
        buffer.removeAll(keepingCapacity: true)
    }

    /// Best effort: abort a multipart upload that will never be completed, so its parts do not linger.
    private func abandonUpload() {
        guard let upload else { return }
        self.upload = nil
        store.abortMultipartUpload(upload.key, uploadID: upload.id)
    }
}

@available(*, unavailable) extension S3BlobWriter: Sendable {}
