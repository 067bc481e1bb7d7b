import SiloCore

/// How a blob is laid out in the bucket: as segments, objects named by the blob offset where they start,
///
///     <prefix>/<blob id>/seg-<offset, 20 decimal digits>
///
/// The zero-padded offset makes the store's lexicographic listing the numeric order. The blob's bytes are the
/// segments read in order, each cut off where the next one starts (a later segment overrides the tail of the one
/// before it). So a resumed upload can drop everything past its offset by writing one new (possibly empty) segment
/// at that offset, without rewriting any object: S3 objects are immutable. See `S3BlobStore` for the whole design.
struct S3SegmentLayout: Sendable {
    /// "" or "some/prefix/".
    let keyPrefix: String

    init(prefix: String) {
        keyPrefix = prefix.isEmpty ? "" : prefix + "/"
    }

    /// `<prefix>/<id>/`: every segment of `id`, and nothing else, starts with it.
    func blobPrefix(_ id: BlobID) -> String { keyPrefix + id.rawValue + "/" }

    func segmentKey(_ id: BlobID, start: Int64) -> String {
        let digits = String(start)
        return blobPrefix(id) + "seg-" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    /// The start offset encoded in a listed key of `id`, or nil for a key that is not one of our segments.
    func segmentStart(_ key: String, of id: BlobID) -> Int64? {
        let prefix = blobPrefix(id) + "seg-"
        guard key.hasPrefix(prefix) else { return nil }
        let digits = key.dropFirst(prefix.count)
        guard digits.count == 20, digits.allSatisfy(\.isASCII) else { return nil }
        return Int64(digits)
    }

    /// The blob a listed segment key `<prefix>/<id>/seg-<offset>` belongs to.
    func blobID(ofSegmentKey key: String) -> BlobID? {
        guard key.hasPrefix(keyPrefix) else { return nil }
        let rest = key.dropFirst(keyPrefix.count)
        guard let slash = rest.firstIndex(of: "/"), let id = BlobID(rawValue: String(rest[..<slash])),
            segmentStart(key, of: id) != nil
        else { return nil }
        return id
    }
}

/// One stored segment object as listed.
struct S3StoredSegment: Sendable, Equatable {
    var key: String
    /// Blob offset of its first byte.
    var start: Int64
    /// Bytes in the object.
    var storedSize: Int64
}

/// A blob's segments resolved into the byte ranges they contribute.
struct S3SegmentChain: Sendable, Equatable {
    struct Piece: Sendable, Equatable {
        var key: String
        var start: Int64
        /// Bytes this segment contributes: up to the next segment's start, or all of it for the last.
        var length: Int64
        /// The object's own size, to detect an object replaced under a reader.
        var storedSize: Int64
        var end: Int64 { start + length }
    }

    /// Non-empty pieces in blob order, contiguous from 0.
    let pieces: [Piece]
    let size: Int64

    /// Resolves `segments` (any order). Throws `.corrupt` when they leave a hole or do not start at 0, which only
    /// a bug or a hand-edited bucket can cause: every change keeps the chain contiguous (see `S3BlobStore`).
    init(_ segments: [S3StoredSegment], blob id: BlobID) throws(StorageError) {
        let sorted = segments.sorted { $0.start < $1.start }
        guard let first = sorted.first else {
            pieces = []
            size = 0
            return
        }
        guard first.start == 0 else {
            throw StorageError(.corrupt, "blob \(id) has no segment at offset 0 (first starts at \(first.start))")
        }
        var pieces: [Piece] = []
        for (index, segment) in sorted.enumerated() {
            let end = segment.start + segment.storedSize
            let length: Int64
            if index + 1 < sorted.count {
                let next = sorted[index + 1].start
                guard next <= end else {
                    throw StorageError(
                        .corrupt, "blob \(id) has a hole between offsets \(end) and \(next) (segment \(segment.key))")
                }
                length = next - segment.start
            } else {
                length = segment.storedSize
            }
            if length > 0 {
                pieces.append(
                    Piece(key: segment.key, start: segment.start, length: length, storedSize: segment.storedSize))
            }
        }
        self.pieces = pieces
        let last = sorted[sorted.count - 1]
        size = last.start + last.storedSize
    }

    /// Index of the piece holding byte `offset` (which must be below `size`).
    func pieceIndex(containing offset: Int64) -> Int {
        var low = 0
        var high = pieces.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if pieces[middle].start <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }
}
