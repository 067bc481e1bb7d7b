import SiloCore
import SiloHashing

/// Appends upload bytes to a blob in batches: the transport's pieces (32 KiB from libmicrohttpd, any size from a
/// multipart parser) are gathered into one buffer, and the writer and the hashes get a full buffer at a time. One
/// `pwrite` and one hash update per batch instead of per piece; a piece at least a batch long, arriving while the
/// buffer is empty, goes through without the copy.
///
/// Memory is one buffer per upload, whatever the object's size. Bytes still in the buffer are not in the blob:
/// ``flush()`` must run before the writer is synced (``BlobIngest`` and ``ResumableChunkSink`` do).
final class BlobAppender {
    /// 256 KiB: large enough that per-call costs vanish next to MD5 and the page-cache copy, small enough that
    /// 32 concurrent uploads stay within the RSS budget.
    static let defaultBatchBytes = 256 << 10

    let writer: any BlobWriter
    /// Nil when a resumable session has lost its running hashes (they are recomputed from the blob at finalize).
    private(set) var hasher: ObjectHasher?
    private let buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0

    init(writer: any BlobWriter, hasher: ObjectHasher?, batchBytes: Int = BlobAppender.defaultBatchBytes) {
        precondition(batchBytes > 0, "BlobAppender needs a positive batch size")
        self.writer = writer
        self.hasher = hasher
        buffer = .allocate(byteCount: batchBytes, alignment: 64)
    }

    deinit { buffer.deallocate() }

    /// Bytes appended so far, including those still buffered.
    var appended: Int64 { writer.offset + Int64(buffered) }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var rest = bytes
        if buffered > 0 {
            let n = min(buffer.count - buffered, rest.count)
            UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<(buffered + n)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[0..<n]))
            buffered += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            guard buffered == buffer.count else { return }
            try flush()
        }
        if rest.count >= buffer.count {
            try store(rest)
        } else if !rest.isEmpty {
            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<rest.count]).copyMemory(from: rest)
            buffered = rest.count
        }
    }

    /// Writes out whatever is buffered.
    func flush() throws {
        guard buffered > 0 else { return }
        let count = buffered
        // Emptied first: after a failed write the writer refuses further use anyway, and the bytes must not be
        // written twice.
        buffered = 0
        try store(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    /// Stops hashing (the caller takes or drops the hasher) and returns the hasher.
    func takeHasher() -> ObjectHasher? {
        defer { hasher = nil }
        return hasher
    }

    private func store(_ bytes: UnsafeRawBufferPointer) throws {
        try writer.write(bytes)
        hasher?.update(bytes)
    }
}
