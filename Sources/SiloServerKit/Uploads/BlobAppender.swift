import Dispatch
import SiloCore
import SiloHashing
import Synchronization

/// Appends upload bytes to a blob in batches: the transport's pieces (a socket read's worth, any size from a
/// multipart parser) are gathered into one buffer, and the writer and the hashes get a full buffer at a time. One
/// `pwrite` and one hash update per batch instead of per piece.
///
/// Once an upload has filled a whole batch, each full batch is handed to two serial queues, one that writes it and
/// one that hashes it (MD5 and CRC32C), while the next batch fills a second buffer. MD5 is the largest single cost of
/// an upload and cannot be split, so on a machine with a spare core this takes it off the receiving thread; pinned to
/// one core it still overlaps the device's time on a write (a direct write waits for the device) with hashing and
/// receiving, at the cost of thread hand-offs per batch. Before that (small objects), and for a piece at least a
/// batch long arriving on an empty buffer, the bytes are written and hashed in place, with no copy.
///
/// Batches end at multiples of the batch size in the blob (a resumed chunk's first batch is shorter), and the buffers
/// are page-aligned: so every full batch is a write the disk store can send to the device without the page cache.
///
/// Memory is at most two buffers per upload (three long ones, below), whatever the object's size. An upload that starts its pipeline while
/// a slot of ``LongBatchSlots`` is free switches to three long buffers (two batches in flight while the third
/// fills): each batch is then one device write, and per-write costs (a virtio notification, an interrupt, two thread
/// hand-offs) are paid eight times less often. The slots bound that memory process-wide, so many concurrent uploads
/// stay at the small size.
/// Every upload starts with one small buffer (``defaultSlowBatchBytes``) and keeps it while its bytes trickle in,
/// as a phone's on a slow link do: only a small batch that fills quickly (``fastFillNanoseconds``) moves it to full
/// batches and the pipeline. Thousands of slow uploads then hold 16 KiB each rather than two full buffers
/// (bench/results/connections.md); a fast upload pays one small batch first.
/// Bytes still in the buffer are not in the blob: ``flush()`` must run before the writer is synced (``BlobIngest``
/// and ``ResumableChunkSink`` do).
final class BlobAppender {
    /// 128 KiB: large enough that per-call costs are small next to MD5, small enough that 32 concurrent uploads stay
    /// within the RSS budget (two buffers each).
    static let defaultBatchBytes = 128 << 10
    /// 1 MiB, for the few uploads that get a slot: a direct write of this size keeps the device ahead of MD5.
    static let defaultLongBatchBytes = 1 << 20
    /// 16 KiB: the first batches' size, kept by an upload whose bytes arrive slowly. A divisor of the batch sizes,
    /// so batches still end at multiples of the size in use.
    static let defaultSlowBatchBytes = 16 << 10
    /// A small batch that fills within 100 ms (160 KiB/s and up) moves the upload to full batches.
    static let fastFillNanoseconds: UInt64 = 100_000_000

    /// A page: what direct I/O needs of a buffer's address.
    private static let bufferAlignment = 4096

    /// The writer, once no batch is being written: a caller may sync, read the offset or close it (an aborted
    /// upload closes it at once, which must not pull the descriptor from under a write in flight).
    var writer: any BlobWriter {
        drainPipeline()
        return target
    }
    private let target: any BlobWriter
    /// Nil when a resumable session has lost its running hashes (they are recomputed from the blob at finalize).
    private var hasher: ObjectHasher?
    /// The buffer being filled.
    private var buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    /// Bytes handed to the writer, including a batch whose write may still be under way.
    private var handedOver: Int64
    /// From the first full batch on: the buffers free to fill next, and those whose batch is in the pipeline (oldest
    /// first, at most ``longBatchesInFlight``).
    private var spares: [UnsafeMutableRawBufferPointer] = []
    private var inFlight: [UnsafeMutableRawBufferPointer] = []
    private var pipeline: BatchPipeline?
    private let pipelined: Bool
    /// The long batch size and where its slots come from, nil for none; `holdsLongSlot` once this upload has one.
    private let longBatches: (bytes: Int, slots: LongBatchSlots)?
    private var holdsLongSlot = false
    /// The batch size once the upload has shown it is fast; `buffer` is smaller until then.
    private let fullBatchBytes: Int
    /// Monotonic nanoseconds (a parameter, so tests can pace an upload); when the small batch now filling began.
    private let clock: () -> UInt64
    private var fillStarted: UInt64

    /// - Parameters:
    ///   - pipelined: whether full batches may be hashed on a second thread (tests check both ways agree).
    ///   - longBatches: the batch size once the pipeline runs, if one of `slots` is free; nil keeps `batchBytes`.
    ///   - slowBatchBytes: the first batches' size (kept while bytes arrive slowly), when smaller than `batchBytes`.
    init(
        writer: any BlobWriter, hasher: ObjectHasher?, batchBytes: Int = BlobAppender.defaultBatchBytes,
        longBatches: (bytes: Int, slots: LongBatchSlots)? = (BlobAppender.defaultLongBatchBytes, .shared),
        slowBatchBytes: Int = BlobAppender.defaultSlowBatchBytes, pipelined: Bool = true,
        clock: @escaping () -> UInt64 = MonotonicClock.nanoseconds
    ) {
        precondition(batchBytes > 0, "BlobAppender needs a positive batch size")
        precondition(
            (longBatches?.bytes ?? batchBytes) >= batchBytes, "BlobAppender's long batches must not be shorter")
        self.target = writer
        self.hasher = hasher
        self.pipelined = pipelined
        self.longBatches = longBatches
        handedOver = writer.offset
        precondition(
            slowBatchBytes > 0 && batchBytes % min(slowBatchBytes, batchBytes) == 0,
            "BlobAppender's slow batches must divide its batches")
        fullBatchBytes = batchBytes
        self.clock = clock
        fillStarted = clock()
        buffer = .allocate(byteCount: min(slowBatchBytes, batchBytes), alignment: Self.bufferAlignment)
    }

    deinit {
        // The queues may still be reading a buffer.
        pipeline?.wait()
        buffer.deallocate()
        for other in spares + inFlight { other.deallocate() }
        if holdsLongSlot { longBatches?.slots.give() }
    }

    /// Bytes appended so far, including those still buffered.
    var appended: Int64 { handedOver + Int64(buffered) }

    /// The memory this upload's buffers take.
    var bufferBytes: Int { buffer.count + (spares + inFlight).reduce(0) { $0 + $1.count } }

    /// The free part of the batch being filled: bytes placed at its start and then passed to ``append(_:)`` are
    /// taken where they lie, with no copy (the transport reads request bodies straight into it). Never empty; valid
    /// until the next call on the appender.
    var freeSpace: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<batchEnd])
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if let start = bytes.baseAddress, let base = buffer.baseAddress, start == UnsafeRawPointer(base + buffered) {
            // Already in place, read into ``freeSpace``.
            precondition(bytes.count <= batchEnd - buffered, "BlobAppender.append beyond its free space")
            buffered += bytes.count
            if buffered == batchEnd { try flushBatch() }
            return
        }
        var rest = bytes
        while !rest.isEmpty {
            let room = batchEnd - buffered
            if buffered == 0, pipeline == nil, rest.count >= room {
                // In place up to the last batch boundary the piece reaches: the caller's bytes are valid only during
                // this call, so they are hashed here too.
                let n = room + (rest.count - room) / buffer.count * buffer.count
                let piece = UnsafeRawBufferPointer(rebasing: rest[0..<n])
                try target.write(piece)
                handedOver += Int64(n)
                hasher?.update(piece)
                // A batch's worth at once: a fast upload.
                useFullBatches()
                startPipeline()
                rest = UnsafeRawBufferPointer(rebasing: rest[n...])
                continue
            }
            let n = min(room, rest.count)
            // (The source may lie in the free space itself, behind dropped bytes: copyMemory allows the overlap.)
            UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<(buffered + n)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[0..<n]))
            buffered += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if n == room { try flushBatch() }
        }
    }

    /// How many bytes the batch being filled holds when full: up to the next multiple of the batch size in the blob.
    private var batchEnd: Int { buffer.count - Int(handedOver % Int64(buffer.count)) }

    /// Writes out whatever is buffered and waits until every write is done, reporting any that failed; the writer
    /// may then be synced. (Hashing may still be under way; ``takeHasher()`` waits for it.)
    func flush() throws {
        try flushBatch()
        defer { reclaimBuffers() }
        try pipeline?.finishWrites()
    }

    /// Waits until nothing is in flight; the buffers are free again.
    private func drainPipeline() {
        pipeline?.wait()
        reclaimBuffers()
    }

    private func reclaimBuffers() {
        spares += inFlight
        inFlight.removeAll()
    }

    /// Hands the buffered bytes to the writer: at once before the pipeline runs, on its write queue after.
    private func flushBatch() throws {
        guard buffered > 0 else { return }
        let batch = UnsafeRawBufferPointer(rebasing: buffer[0..<buffered])
        let full = buffered == batchEnd
        // Emptied first: after a failed write the writer refuses further use anyway, and the bytes must not be
        // written twice.
        buffered = 0
        if let pipeline {
            if spares.isEmpty {
                // Every other buffer is in flight: the oldest batch's write and hashing must end before its buffer
                // is filled again. A failed write is reported here.
                pipeline.waitForOldest()
                spares.append(inFlight.removeFirst())
                try pipeline.reportWriteFailure()
            }
            pipeline.submit(batch)
            handedOver += Int64(batch.count)
            inFlight.append(buffer)
            buffer = spares.removeLast()
            return
        }
        try target.write(batch)
        handedOver += Int64(batch.count)
        // Hashed here, so that the pipeline may start with buffers of another size.
        hasher?.update(batch)
        if buffer.count < fullBatchBytes {
            let now = clock()
            let quick = now &- fillStarted < Self.fastFillNanoseconds
            fillStarted = now
            // Bytes trickling in: the small buffer is enough, and a pipeline would only hold more memory.
            guard full && quick else { return }
            useFullBatches()
        }
        if full { startPipeline() }
    }

    /// Replaces the small first buffer with a full-size one; called with the buffer empty and nothing in flight.
    private func useFullBatches() {
        guard buffer.count < fullBatchBytes else { return }
        buffer.deallocate()
        buffer = .allocate(byteCount: fullBatchBytes, alignment: Self.bufferAlignment)
    }

    /// Stops hashing and returns the hasher with every flushed byte in it (the caller finalizes or keeps it).
    func takeHasher() -> ObjectHasher? {
        drainPipeline()
        defer { hasher = nil }
        return hasher
    }

    /// Called with the buffer empty and nothing in flight.
    private func startPipeline() {
        guard pipelined, let hasher, pipeline == nil else { return }
        pipeline = BatchPipeline(writer: target, hasher: hasher)
        if let longBatches, longBatches.bytes > buffer.count, longBatches.slots.take() {
            holdsLongSlot = true
            buffer.deallocate()
            buffer = .allocate(byteCount: longBatches.bytes, alignment: Self.bufferAlignment)
        }
        spares = (1...(holdsLongSlot ? Self.longBatchesInFlight : 1)).map { _ in
            .allocate(byteCount: buffer.count, alignment: Self.bufferAlignment)
        }
    }

    /// Long batches written and hashed at once while the next one fills: two, so that the hashing thread finds the
    /// next batch queued when it finishes one, instead of waiting for the receiving thread to be woken and hand it
    /// over (two thread wake-ups per batch, on the path of the upload's slowest stage). Short batches keep one in
    /// flight: they are for many concurrent uploads, whose hashing keeps the pool busy anyway, and their buffers
    /// count against the RSS budget per upload.
    static let longBatchesInFlight = 2
}

/// How many uploads may hold long batch buffers at once: the bound on that memory, whatever the number of uploads.
final class LongBatchSlots: Sendable {
    /// Two: 6 MiB of long buffers in the process, on top of the transport's own body buffers (peak RSS with 32
    /// concurrent 256 MiB uploads measured 61 MiB with four slots, against the 64 MiB budget).
    static let shared = LongBatchSlots(limit: 2)

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

/// Writes and hashes batches, each on its own serial queue (so both stay in order), while its owner fills the next
/// batch. The two only read a batch, so they run at once: the write may wait for the device while the hash runs.
/// Several batches may be in flight; the owner waits for them oldest first.
///
/// `@unchecked Sendable`: the writer, the hasher and each submitted batch's bytes are used by the queues only between
/// `submit` and the wait that covers it, and by the owner only outside that window; `pending` is the owner's; the
/// write error is behind its lock, since a later batch's write may fail while the owner reads it.
private final class BatchPipeline: @unchecked Sendable {
    private let writer: any BlobWriter
    private let hasher: ObjectHasher
    /// Not on the shared pool: a write can block its thread on the device, and the pool has about one thread per
    /// core for everyone's hashing.
    private let writes = DispatchQueue(label: "silo.upload-write")
    /// On the shared (not overcommitting) pool, so many concurrent uploads share about one thread per core.
    private let hashes = DispatchQueue(label: "silo.upload-hash", target: .global())
    /// One group per batch in flight, oldest first: left by its write and by its hash.
    private var pending: [DispatchGroup] = []
    /// The first write that failed, and whether the owner has been told: later batches fail after it (the writer
    /// refuses further use), and their errors are the same failure, so it is reported once.
    private let writeFailure = Mutex<(error: (any Error)?, reported: Bool)>((nil, false))

    init(writer: any BlobWriter, hasher: ObjectHasher) {
        self.writer = writer
        self.hasher = hasher
    }

    /// Starts writing and hashing `bytes`, which must stay valid and unchanged until a wait covers them.
    func submit(_ bytes: UnsafeRawBufferPointer) {
        let address = UInt(bitPattern: bytes.baseAddress)
        let count = bytes.count
        let done = DispatchGroup()
        pending.append(done)
        done.enter()
        writes.async {
            do {
                try self.writer.write(Self.batch(address, count))
            } catch {
                self.writeFailure.withLock { if $0.error == nil { $0.error = error } }
            }
            done.leave()
        }
        done.enter()
        hashes.async {
            self.hasher.update(Self.batch(address, count))
            done.leave()
        }
    }

    private static func batch(_ address: UInt, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: address), count: count)
    }

    /// Returns once every submitted batch is written (or failed) and in the hasher.
    func wait() {
        for done in pending { done.wait() }
        pending.removeAll()
    }

    /// Returns once the oldest batch in flight is written (or failed) and in the hasher.
    func waitForOldest() {
        guard !pending.isEmpty else { return }
        pending.removeFirst().wait()
    }

    /// Waits for every batch in flight and throws if a write failed.
    func finishWrites() throws {
        wait()
        try reportWriteFailure()
    }

    /// Throws the first write failure, once (the writer refuses further writes after it).
    func reportWriteFailure() throws {
        let unreported = writeFailure.withLock { failure -> (any Error)? in
            guard !failure.reported, let error = failure.error else { return nil }
            failure.reported = true
            return error
        }
        if let unreported { throw unreported }
    }
}
