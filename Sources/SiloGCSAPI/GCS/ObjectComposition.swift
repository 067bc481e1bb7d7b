package import SiloCore
import SiloHashing
import SiloServerKit

/// One source of a composed object: a blob with its size and CRC32C (a stored version for the JSON API's compose,
/// an uploaded part for an XML multipart upload).
package struct ComposedSource: Sendable, Equatable {
    var blobID: BlobID
    var size: Int64
    var crc32c: UInt32

    package init(blobID: BlobID, size: Int64, crc32c: UInt32) {
        self.blobID = blobID
        self.size = size
        self.crc32c = crc32c
    }
}

extension ObjectService {
    /// Makes the concatenation of `sources` a new version of `name` without the server reading their bytes: the blob
    /// store composes them (inside itself where it can, see ``BlobStore/composeBlob(_:from:)``), the CRC32C is
    /// combined from the sources' own, and — as GCS does for composite objects — there is no MD5. Commits with
    /// `conditions` checked in the store's transaction, once `principal` may still write `name` as it is then
    /// (``gcsPinned(_:_:conditions:principal:write:)``); with `sessionID`, the same transaction finalizes that upload
    /// session. The JSON API's compose and XML multipart uploads both end here.
    package func compose(
        _ sources: [ComposedSource], into bucket: BucketName, _ name: ObjectName, fields: ObjectFields,
        conditions: Preconditions, principal: Principal?, componentCount: Int, time: Timestamp,
        finalizing sessionID: String? = nil
    ) throws -> ObjectRecord {
        // Each source is at most an object's size and there are at most 10 000: no overflow.
        let size = sources.reduce(Int64(0)) { $0 + $1.size }
        try checkServed(bucket)
        try checkObjectSize(size, "\(bucket)/\(name)")
        let slices = sources.map { BlobSlice($0.blobID, length: $0.size) }
        // A result small enough to keep inline is read together here, as an upload of it would be held.
        let inline = try size <= Int64(metadata.inlineBlobLimit)
        let blobID = inline ? BlobID.inline(at: time) : BlobID.random()
        if !inline { try metadata.registerPendingBlob(blobID, at: time) }
        do {
            var inlineBytes: [UInt8]?
            if inline {
                inlineBytes = try concatenation(of: slices, size: Int(size))
            } else if try blobs.composeBlob(blobID, from: slices) == .streamed {
                logger.info(
                    "composed object written through the server: the blob store cannot copy inside itself",
                    metadata: ["silo.bucket": bucket.rawValue, "silo.blob": blobID.rawValue, "silo.bytes": "\(size)"])
            }
            let crc32c = sources.reduce(UInt32(0)) { CRC32C.combine($0, $1.crc32c, secondLength: $1.size) }
            let draft = ObjectDraft(
                bucket: bucket, name: name, blob: BlobSummary(size: size, md5: [], crc32c: crc32c), blobID: blobID,
                fields: fields, componentCount: componentCount,
                // An XML multipart upload (the one that finalizes a session) creates its bucket in emulator mode.
                createsBucket: sessionID != nil && configuration.createBucketsOnUpload, inlineBytes: inlineBytes)
            return try gcsPinned(bucket, name, conditions: conditions, principal: principal) { pins in
                try commit(draft, conditions: pins, time: Timestamp.now(), finalizing: sessionID)
            }
        } catch {
            if !inline { discardBlob(blobID) }
            throw error
        }
    }

    /// The bytes of `slices` one after another, `size` in all (small: at most the inline limit).
    private func concatenation(of slices: [BlobSlice], size: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        try bytes.withUnsafeMutableBytes { buffer in
            for slice in slices {
                let reader = try blobs.openReader(slice.id)
                try slice.check(size: reader.size)
                let end = filled + Int(slice.length)
                try reader.fill(UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<end]), at: 0)
                filled = end
            }
        }
        return bytes
    }
}
