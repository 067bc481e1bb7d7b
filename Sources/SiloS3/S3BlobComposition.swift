import Foundation
public import SiloCore
import SiloCurl
import SiloS3Signer
import SiloWire

/// Composition inside the bucket: the new blob's segments are server-side copies of the sources' segments, placed at
/// the offsets where each source starts (``S3SegmentLayout``), so no byte of the composed blob passes through the
/// server. A segment copies with one CopyObject; one larger than ``Configuration/maxCopyBytes`` (S3's 5 GiB limit
/// for a copy) or cut short by a later segment copies by ranges into a multipart upload (UploadPartCopy).
extension S3BlobStore {
    public func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod {
        // Replacing: whatever an earlier attempt left under `id` goes first.
        let stale = try storage { () throws(S3Error) in try listSegments(id) }.map(\.key)
        if !stale.isEmpty { try storage { () throws(S3Error) in try deleteObjects(stale) } }
        var start: Int64 = 0
        var wrote = false
        for source in sources {
            let segments = try storage { () throws(S3Error) in try listSegments(source.id) }
            guard !segments.isEmpty else { throw StorageError(.notFound, "blob \(source.id) does not exist") }
            let chain = try S3SegmentChain(segments, blob: source.id)
            try source.check(size: chain.size)
            for piece in chain.pieces {
                let target = layout.segmentKey(id, start: start + piece.start)
                try storage { () throws(S3Error) in
                    try copySegment(
                        piece.key, to: target, length: piece.length, whole: piece.length == piece.storedSize)
                }
                wrote = true
            }
            start += source.length
        }
        // Only empty sources: the blob still exists, empty.
        if !wrote {
            try storage { () throws(S3Error) in
                try putObject(layout.segmentKey(id, start: 0), body: Data(), summary: "compose empty blob \(id)")
            }
        }
        return .storeSide
    }

    /// Copies the first `length` bytes of `source` to `target` inside the bucket.
    func copySegment(_ source: String, to target: String, length: Int64, whole: Bool) throws(S3Error) {
        let copySource = "/" + configuration.bucket + "/" + source
        if whole && length <= configuration.maxCopyBytes {
            let reply = try client.send(
                S3Operation(
                    method: "PUT", key: target, headers: [SigV4Header("x-amz-copy-source", copySourceHeader(source))],
                    summary: "copy \(copySource) to \(target)"))
            try Self.refuseErrorBody(reply, "copy \(copySource) to \(target)")
            return
        }
        let uploadID = try startMultipartUpload(target)
        do throws(S3Error) {
            var etags: [String] = []
            var first: Int64 = 0
            while first < length {
                let last = min(length, first + configuration.maxCopyBytes) - 1
                let number = etags.count + 1
                let reply = try client.send(
                    S3Operation(
                        method: "PUT", key: target,
                        query: [SigV4QueryItem("partNumber", String(number)), SigV4QueryItem("uploadId", uploadID)],
                        headers: [
                            SigV4Header("x-amz-copy-source", copySourceHeader(source)),
                            SigV4Header("x-amz-copy-source-range", "bytes=\(first)-\(last)"),
                        ],
                        summary: "copy bytes \(first)-\(last) of \(copySource) as part \(number) of \(target)"))
                try Self.refuseErrorBody(reply, "copy part \(number) of \(target)")
                guard let etag = XMLText.value("ETag", in: Substring(decoding: reply.body, as: UTF8.self)),
                    !etag.isEmpty
                else { throw S3Error(.invalidResponse, "copy part \(number) of \(target): no ETag in the reply") }
                etags.append(etag)
                first = last + 1
            }
            try completeMultipartUpload(target, uploadID: uploadID, etags: etags, size: length)
        } catch {
            abortMultipartUpload(target, uploadID: uploadID)
            throw error
        }
    }

    /// `x-amz-copy-source`: `bucket/key`, percent-encoded as a path.
    private func copySourceHeader(_ key: String) -> String {
        SigV4Encoding.path("/" + configuration.bucket + "/" + key)
    }
}
