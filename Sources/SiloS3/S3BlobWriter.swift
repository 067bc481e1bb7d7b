import Foundation
import SiloCore
import SiloCurl
import SiloS3Signer
import SiloWire

/// Writes one blob as segments (see ``S3BlobStore``): buffers up to one part, streams full parts into a multipart
/// upload, and publishes the current segment on `sync()` and `close()`.
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
    /// A new blob must get its (possibly empty) first segment even if nothing is written.
    private var mustPublish: Bool
    private var closed = false
    /// After a failed S3 call the segment's state is unknown; the writer refuses further use.
    private var failure: StorageError?
    /// Largest buffer held so far, for tests of the memory bound.
    private(set) var peakBufferedBytes = 0
    /// Multipart parts sent so far, for tests of the multipart threshold.
    private(set) var partsSent = 0

    init(store: S3BlobStore, id: BlobID, offset: Int64, mustPublish: Bool) {
        self.store = store
        self.id = id
        self.offset = offset
        self.segmentStart = offset
        self.mustPublish = mustPublish
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
        guard failure == nil else {
            abandonUpload()
            return
        }
        // close() cannot report errors: callers that need the bytes durable call sync() first, as BlobIngest
        // does. What is lost here is only what was never acknowledged.
        do {
            try publish()
        } catch {
            abandonUpload()
        }
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
            if let upload { try complete(upload) }
            upload = nil
        } else if !buffer.isEmpty || mustPublish {
            try store.putObject(key, body: buffer, summary: "blob \(id) segment")
        }
        buffer.removeAll(keepingCapacity: true)
        mustPublish = false
        segmentStart = offset
    }

    /// Sends the buffer as the next part, starting the multipart upload first if needed.
    private func sendPart() throws(S3Error) {
        if upload == nil {
            let key = store.layout.segmentKey(id, start: segmentStart)
            let reply = try store.client.send(
                S3Operation(
                    method: "POST", key: key, query: [SigV4QueryItem("uploads")],
                    summary: "start multipart upload of \(key)"))
            guard let uploadID = XMLText.value("UploadId", in: Substring(decoding: reply.body, as: UTF8.self)) else {
                throw S3Error(.invalidResponse, "start multipart upload of \(key): no UploadId in the reply")
            }
            upload = (uploadID, key, [])
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

    /// CompleteMultipartUpload. Its reply's ETag is not used (Ceph sends it empty); a 200 can still carry an
    /// `<Error>` body, which counts as failure.
    private func complete(_ upload: (id: String, key: String, etags: [String])) throws(S3Error) {
        let parts = upload.etags.enumerated().map { index, etag in
            "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(XMLText.escape(etag))</ETag></Part>"
        }
        let body = Data(("<CompleteMultipartUpload>" + parts.joined() + "</CompleteMultipartUpload>").utf8)
        let reply: CurlBufferedResponse
        do {
            reply = try store.client.send(
                S3Operation(
                    method: "POST", key: upload.key, query: [SigV4QueryItem("uploadId", upload.id)],
                    headers: [SigV4Header("Content-Type", "application/xml")], body: body,
                    summary: "complete multipart upload of \(upload.key)"))
        } catch  where error.s3Code == "NoSuchUpload" {
            // A retried completion whose first attempt succeeded (its reply lost): the upload is gone because the
            // object exists. Accept that only if the object has exactly the segment's size.
            let head = try store.client.send(
                S3Operation(method: "HEAD", key: upload.key, summary: "check completed upload of \(upload.key)"))
            guard head.head.header("Content-Length").flatMap({ Int64($0) }) == offset - segmentStart else {
                throw error
            }
            return
        }
        let xml = Substring(decoding: reply.body, as: UTF8.self)
        if !XMLText.elements("Error", in: xml).isEmpty {
            throw S3Client.failure(
                CurlBufferedResponse(head: CurlResponseHead(status: 500, headers: []), body: reply.body),
                "complete multipart upload of \(upload.key)")
        }
    }

    /// Best effort: abort a multipart upload that will never be completed, so its parts do not linger.
    private func abandonUpload() {
        guard let upload else { return }
        self.upload = nil
        _ = try? store.client.send(
            S3Operation(
                method: "DELETE", key: upload.key, query: [SigV4QueryItem("uploadId", upload.id)],
                summary: "abort multipart upload of \(upload.key)"))
    }
}

@available(*, unavailable) extension S3BlobWriter: Sendable {}
