import Dispatch
import SiloCore
import SiloHashing

/// Appends upload bytes to a blob in batches: the transport's pieces (32 KiB from libmicrohttpd, any size from a
/// multipart parser) are gathered into one buffer, and the writer and the hashes get a full buffer at a time. One
/// `pwrite` and one hash update per batch instead of per piece.
///
/// Once an upload has filled a whole batch, it hashes on a second thread: each full batch is written at once and then
/// handed to a serial queue for MD5 and CRC32C while the next batch fills a second buffer. MD5 is the largest single
/// cost of an upload and cannot be split, so on a machine with a spare core this takes it off the receiving thread;
/// pinned to one core it costs one thread hand-off per batch. Before that (small objects), and for a piece at least a
/// batch long arriving on an empty buffer, the bytes are written and hashed in place, with no copy.
///
/// Memory is at most two buffers per upload, whatever the object's size. Bytes still in the buffer are not in the
/// blob: ``flush()`` must run before the writer is synced (``BlobIngest`` and ``ResumableChunkSink`` do).
final class BlobAppender {
    /// 128 KiB: large enough that per-call costs vanish next to MD5 and the page-cache copy, small enough that
    /// 32 concurrent uploads stay within the RSS budget (two buffers each).
    static let defaultBatchBytes = 128 << 10

    let writer: any BlobWriter
    /// Nil when a resumable session has lost its running hashes (they are recomputed from the blob at finalize).
    private var hasher: ObjectHasher?
    /// The buffer being filled.
    private var buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    /// The second buffer and the hashing queue, from the first full batch on; `spare` may be being hashed.
    private var spare: UnsafeMutableRawBufferPointer?
    private var pipeline: HashPipeline?
    private let pipelined: Bool

    /// - Parameter pipelined: whether full batches may be hashed on a second thread (tests check both ways agree).
    init(
        writer: any BlobWriter, hasher: ObjectHasher?, batchBytes: Int = BlobAppender.defaultBatchBytes,
        pipelined: Bool = true
    ) {
        precondition(batchBytes > 0, "BlobAppender needs a positive batch size")
        self.writer = writer
        self.hasher = hasher
        self.pipelined = pipelined
        buffer = .allocate(byteCount: batchBytes, alignment: 64)
    }

    deinit {
        // The queue may still be reading a buffer.
        pipeline?.wait()
        buffer.deallocate()
        spare?.deallocate()
    }

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
        while rest.count >= buffer.count {
            if pipeline == nil {
                // In place: the caller's bytes are valid only during this call, so they are hashed here too.
                try writer.write(rest)
                hasher?.update(rest)
                startPipeline()
                return
            }
            let n = buffer.count
            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: rest[0..<n]))
            buffered = n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            try flush()
        }
        if !rest.isEmpty {
            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<rest.count]).copyMemory(from: rest)
            buffered = rest.count
        }
    }

    /// Writes out whatever is buffered (its hashing may still be under way; ``takeHasher()`` waits for it).
    func flush() throws {
        guard buffered > 0 else { return }
        let batch = UnsafeRawBufferPointer(rebasing: buffer[0..<buffered])
        let full = buffered == buffer.count
        // Emptied first: after a failed write the writer refuses further use anyway, and the bytes must not be
        // written twice.
        buffered = 0
        try writer.write(batch)
        guard let hasher else { return }
        if pipeline == nil, full { startPipeline() }
        guard let pipeline, let other = spare else {
            hasher.update(batch)
            return
        }
        pipeline.wait()  // the other buffer's hashing is done: it can be filled, and the hashes stay in order
        pipeline.submit(batch)
        spare = buffer
        buffer = other
    }

    /// Stops hashing and returns the hasher with every flushed byte in it (the caller finalizes or keeps it).
    func takeHasher() -> ObjectHasher? {
        pipeline?.wait()
        defer { hasher = nil }
        return hasher
    }

    private func startPipeline() {
        guard pipelined, let hasher, pipeline == nil else { return }
        pipeline = HashPipeline(hasher)
        spare = .allocate(byteCount: buffer.count, alignment: 64)
    }
}

/// Hashes one batch at a time on a serial queue while its owner fills the next batch.
///
/// `@unchecked Sendable`: the hasher and the submitted bytes are used by the queue only between `submit` and the
/// matching `wait`, and by the owner only outside that window; `inFlight` is the owner's alone.
private final class HashPipeline: @unchecked Sendable {
    private let hasher: ObjectHasher
    /// On the shared (not overcommitting) pool, so many concurrent uploads share about one thread per core.
    private let queue = DispatchQueue(label: "silo.upload-hash", target: .global())
    private let hashed = DispatchSemaphore(value: 0)
    private var inFlight = false

    init(_ hasher: ObjectHasher) { self.hasher = hasher }

    /// Starts hashing `bytes`, which must stay valid and unchanged until `wait` returns.
    func submit(_ bytes: UnsafeRawBufferPointer) {
        precondition(!inFlight, "HashPipeline.submit with a batch still in flight")
        inFlight = true
        let address = UInt(bitPattern: bytes.baseAddress)
        let count = bytes.count
        queue.async {
            self.hasher.update(UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: address), count: count))
            self.hashed.signal()
        }
    }

    /// Returns once the submitted batch, if any, is in the hasher.
    func wait() {
        guard inFlight else { return }
        hashed.wait()
        inFlight = false
    }
}
