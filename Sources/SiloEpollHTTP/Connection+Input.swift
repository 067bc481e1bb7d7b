#if os(Linux)
import Glibc
import SiloHTTP

/// The read path: the head buffer (`inbound`), body bytes read straight into the connection's body buffers, the
/// one read ahead while a sink works, and the reads of a lingering close. Every read goes through ``io``.
extension Connection {
    func readAvailable() {
        if phase == .readingBody && start == end {
            readBodyDirectly()
            return
        }
        if end == inbound.count {
            guard makeRoom() else {
                process()
                return
            }
        }
        guard let base = inbound.baseAddress,
            let count = received(
                io.read(into: UnsafeMutableRawBufferPointer(start: base + end, count: inbound.count - end)))
        else { return }
        end += count
        process()
    }

    /// Reads body bytes into a large body buffer (``readBuffer()``) and hands them to the sink from there, so uploads
    /// arrive in big chunks without passing through the head buffer.
    private func readBodyDirectly() {
        if let lent, case .readingBody = machine.state {
            readIntoLent(lent)
            return
        }
        let buffer = readBuffer()
        guard let count = readBody(into: buffer), let base = buffer.baseAddress else { return }
        consumeRead(base, count)
        guard phase != .closed else { return }
        process()
    }

    /// Reads into the sink's buffer and hands it over once full, at the body's declared end, or after each read of a
    /// chunked body (whose framing is squeezed out per read, as in any buffer).
    private func readIntoLent(_ buffer: UnsafeMutableRawBufferPointer) {
        let free = UnsafeMutableRawBufferPointer(rebasing: buffer[lentFilled...])
        let limit = chunked == nil ? Int(min(Int64(free.count), bodyRemaining - Int64(lentFilled))) : free.count
        guard let base = buffer.baseAddress,
            let count = received(io.read(into: UnsafeMutableRawBufferPointer(rebasing: free[0..<limit])))
        else { return }
        lentFilled += count
        if chunked == nil {
            // The next wake-up once this buffer's worth of the body is there (never more than the body has left).
            let unread = Int(clamping: bodyRemaining - Int64(lentFilled))
            let room = buffer.count - lentFilled
            wakeForBody(min(unread, room == 0 ? Self.maxLowWater : room))
        }
        guard chunked != nil || lentFilled == buffer.count || Int64(lentFilled) == bodyRemaining else { return }
        let filled = lentFilled
        // The buffer goes back to the sink with the chunk (``deliver(_:)`` lets go of it; the call's result lends
        // the next one). A read of chunked framing alone delivers nothing, and the buffer stays lent.
        lentFilled = 0
        consumeRead(base, filled)
        guard phase != .closed else { return }
        process()
    }

    /// Hands `count` body bytes read at `base` on; what follows the end of a chunked body goes to `inbound`.
    private func consumeRead(_ base: UnsafeMutableRawPointer, _ count: Int) {
        let used = consumeBody(UnsafeMutableRawBufferPointer(start: base, count: count))
        guard phase != .closed else { return }
        if used < count && phase != .closing {
            // (A chunk with a worker lies in a body buffer, before `used`; `inbound` holds none of it.)
            // A chunked body ended inside this read: what follows is the next request.
            append(UnsafeRawBufferPointer(start: base + used, count: count - used))
        }
    }

    /// The sink is receiving a chunk and more of the body may follow: the next read can go to the spare buffer.
    var canReadAhead: Bool {
        guard !sinkLends, readAhead == 0, phase == .readingBody, start == end, !bodyEndPending,
            case .receiving = machine.state
        else { return false }
        return chunked != nil || bodyRemaining > 0
    }

    /// Reads the next piece of the body into the spare buffer while the sink works on the previous one.
    func readBodyAhead() {
        let buffer = spareBuffer ?? allocateBodyBuffer()
        spareBuffer = buffer
        // `bodyRemaining` already excludes the chunk with the sink.
        guard let count = readBody(into: buffer) else { return }
        readAhead = count
    }

    /// One read of body bytes into `buffer`: with a known length no further than the body's end, so no bytes of the
    /// next request land there. Nil when nothing was read (``received(_:)`` has dealt with the connection).
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        // Not a lent buffer: the mark a lent one raised (a sink may stop lending mid-body) would otherwise outlast
        // it, and a tail shorter than the mark would never wake the loop.
        wakeForBody(1)
        let limit = chunked == nil ? Int(min(Int64(buffer.count), bodyRemaining)) : buffer.count
        return received(io.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<limit])))
    }

    /// The sink is done with its chunk: what was read ahead goes on, and the buffers swap.
    func consumeReadAhead() {
        let count = readAhead
        readAhead = 0
        guard let ahead = spareBuffer, let base = ahead.baseAddress else { return }
        spareBuffer = bodyBuffer
        bodyBuffer = ahead
        consumeRead(base, count)
    }

    /// Where body bytes are read: the connection's own buffer while a sink may take them to a worker, the loop's
    /// while they are only dropped.
    private func readBuffer() -> UnsafeMutableRawBufferPointer {
        guard case .readingBody = machine.state else { return loop.bodyBuffer }
        if let bodyBuffer { return bodyBuffer }
        let buffer = allocateBodyBuffer()
        bodyBuffer = buffer
        return buffer
    }

    private func allocateBodyBuffer() -> UnsafeMutableRawBufferPointer {
        // Half the configured size (there may be two); no bigger than a body of known length needs, so a small
        // upload does not map and unmap a large block.
        let size = state.configuration.readBufferSize / 2
        let capacity = chunked == nil ? Int(min(Int64(size), max(4096, bodyRemaining))) : size
        return UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
    }

    /// How much body a wake-up waits for at most. With a client sending fast, a 1 MiB upload buffer then fills in
    /// about four wake-ups instead of one per 64 KiB segment, each of which preempted the hashing thread on a
    /// shared core (bench/results/upload.md).
    static let maxLowWater = 256 << 10

    /// Raises or restores the socket's low-water mark to `bytes` (at most ``maxLowWater``), with one system call
    /// only when it changes.
    func wakeForBody(_ bytes: Int) {
        let target = max(1, min(bytes, Self.maxLowWater))
        guard target != lowWater else { return }
        io.reportReadable(atLeast: target)
        lowWater = target
    }

    func releaseBodyBuffer() {
        wakeForBody(1)
        guard runningCall == nil else { return }
        lent = nil
        lentFilled = 0
        sinkLends = false
        bodyBuffer?.deallocate()
        bodyBuffer = nil
        spareBuffer?.deallocate()
        spareBuffer = nil
        readAhead = 0
    }

    /// The bytes a read brought, or nil: none yet (wait for the next event), or the client is gone (end of stream
    /// or a reset: the connection is closed, a body in progress aborted).
    private func received(_ result: IOResult) -> Int? {
        switch result {
        case .transferred(let count):
            lastActivity = loop.now
            return count
        case .wouldBlock:
            return nil
        case .endOfStream:
            close(reason: "client closed")
            return nil
        case .failed:
            close(reason: "read failed")
            return nil
        }
    }

    /// Makes space at the end of `inbound`: drops consumed bytes, then grows up to the head limit.
    private func makeRoom() -> Bool {
        if start > 0, let base = inbound.baseAddress {
            let live = end - start
            if live > 0 { memmove(base, base + start, live) }
            start = 0
            end = live
            if end < inbound.count { return true }
        }
        let limit = state.configuration.maxRequestHeadBytes
        guard inbound.count < limit else { return false }
        grow(to: inbound.count == 0 ? 4096 : min(limit, inbound.count * 2))
        return true
    }

    private func grow(to capacity: Int) {
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        if let old = inbound.baseAddress, let new = bigger.baseAddress {
            if end > start { memcpy(new, old + start, end - start) }
            inbound.deallocate()
        }
        end -= start
        start = 0
        inbound = bigger
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if inbound.count - end < bytes.count {
            grow(to: max(inbound.count, end - start + bytes.count, 4096))
        }
        guard let base = inbound.baseAddress else { return }
        memcpy(base + end, source, bytes.count)
        end += bytes.count
    }

    /// Reads and drops what the client still sends after the final answer, up to a bound.
    func linger() {
        switch io.read(into: loop.bodyBuffer) {
        case .wouldBlock:
            return
        case .transferred(let count):
            lingered += Int64(count)
            if lingered > lingerLimit { close(reason: nil) }
        case .endOfStream, .failed:
            close(reason: nil)
        }
    }
}
#endif
