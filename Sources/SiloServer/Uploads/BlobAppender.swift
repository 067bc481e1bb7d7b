import Dispatch
import SiloCore
import SiloHashing
import Synchronization

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
/// Batches end at multiples of the batch size in the blob (a resumed chunk's first batch is shorter), and the buffers
/// are page-aligned: so every full batch is a write the disk store can send to the device without the page cache.
///
/// Memory is at most two buffers per upload, whatever the object's size. An upload that starts its pipeline while
/// a slot of ``LongBatchSlots`` is free switches to two long buffers: each batch is then one
/// device write, and per-write costs (a virtio notification, an interrupt, two thread hand-offs) are paid eight times
/// less often. The slots bound that memory process-wide, so many concurrent uploads stay at the small size.
/// Bytes still in the buffer are not in the blob: ``flush()`` must run before the writer is synced (``BlobIngest``
/// and ``ResumableChunkSink`` do).
final class BlobAppender {
    /// 128 KiB: large enough that per-call costs are small next to MD5, small enough that 32 concurrent uploads stay
    /// within the RSS budget (two buffers each).
    static let defaultBatchBytes = 128 << 10
    /// 1 MiB, for the few uploads that get a slot: a direct write of this size keeps the device ahead of MD5.
    static let defaultLongBatchBytes = 1 << 20

    /// A page: what direct I/O needs of a buffer's address.
    private static let bufferAlignment = 4096

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
    /// The long batch size and where its slots come from, nil for none; `holdsLongSlot` once this upload has one.
    private let longBatches: (bytes: Int, slots: LongBatchSlots)?
    private var holdsLongSlot = false

    /// - Parameters:
    ///   - pipelined: whether full batches may be hashed on a second thread (tests check both ways agree).
    ///   - longBatches: the batch size once the pipeline runs, if one of `slots` is free; nil keeps `batchBytes`.
    init(
        writer: any BlobWriter, hasher: ObjectHasher?, batchBytes: Int = BlobAppender.defaultBatchBytes,
        longBatches: (bytes: Int, slots: LongBatchSlots)? = (BlobAppender.defaultLongBatchBytes, .shared),
        pipelined: Bool = true
    ) {
        precondition(batchBytes > 0, "BlobAppender needs a positive batch size")
        precondition(
            (longBatches?.bytes ?? batchBytes) >= batchBytes, "BlobAppender's long batches must not be shorter")
        self.writer = writer
        self.hasher = hasher
        self.pipelined = pipelined
        self.longBatches = longBatches
        buffer = .allocate(byteCount: batchBytes, alignment: Self.bufferAlignment)
    }

    deinit {
        // The queue may still be reading a buffer.
        pipeline?.wait()
        buffer.deallocate()
        spare?.deallocate()
        if holdsLongSlot { longBatches?.slots.give() }
    }

    /// Bytes appended so far, including those still buffered.
    var appended: Int64 { writer.offset + Int64(buffered) }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var rest = bytes
        while !rest.isEmpty {
            let room = batchEnd - buffered
            if buffered == 0, pipeline == nil, rest.count >= room {
                // In place up to the last batch boundary the piece reaches: the caller's bytes are valid only during
                // this call, so they are hashed here too.
                let n = room + (rest.count - room) / buffer.count * buffer.count
                let piece = UnsafeRawBufferPointer(rebasing: rest[0..<n])
                try writer.write(piece)
                hasher?.update(piece)
                startPipeline()
                rest = UnsafeRawBufferPointer(rebasing: rest[n...])
                continue
            }
            let n = min(room, rest.count)
            UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<(buffered + n)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[0..<n]))
            buffered += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if n == room { try flush() }
        }
    }

    /// How many bytes the batch being filled holds when full: up to the next multiple of the batch size in the blob.
    private var batchEnd: Int { buffer.count - Int(writer.offset % Int64(buffer.count)) }

    /// Writes out whatever is buffered (its hashing may still be under way; ``takeHasher()`` waits for it).
    func flush() throws {
        guard buffered > 0 else { return }
        let batch = UnsafeRawBufferPointer(rebasing: buffer[0..<buffered])
        let full = buffered == batchEnd
        // Emptied first: after a failed write the writer refuses further use anyway, and the bytes must not be
        // written twice.
        buffered = 0
        try writer.write(batch)
        guard let hasher else { return }
        if pipeline == nil, full {
            // Hashed here, so that the pipeline may start with buffers of another size.
            hasher.update(batch)
            startPipeline()
            return
        }
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

    /// Called with the buffer empty and nothing in flight.
    private func startPipeline() {
        guard pipelined, let hasher, pipeline == nil else { return }
        pipeline = HashPipeline(hasher)
        if let longBatches, longBatches.bytes > buffer.count, longBatches.slots.take() {
            holdsLongSlot = true
            buffer.deallocate()
            buffer = .allocate(byteCount: longBatches.bytes, alignment: Self.bufferAlignment)
        }
        spare = .allocate(byteCount: buffer.count, alignment: Self.bufferAlignment)
    }
}

/// How many uploads may hold long batch buffers at once: the bound on that memory, whatever the number of uploads.
final class LongBatchSlots: Sendable {
    /// Four: 8 MiB of long buffers in the process.
    static let shared = LongBatchSlots(limit: 4)

    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    var inUse: Int { used.load(ordering: .relaxed) }

    /// Takes a slot if one is free.
    func take() -> Bool {
        var current = used.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, found) = used.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = found
        }
        return false
    }

    func give() { used.subtract(1, ordering: .relaxed) }
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
