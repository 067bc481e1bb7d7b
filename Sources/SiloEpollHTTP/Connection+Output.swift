#if os(Linux)
import Glibc
import SiloCore
import SiloHTTP
import Synchronization

/// The write path: `out` (heads and bodies in memory), then a file body by sendfile or a streamed body that a
/// worker produces block by block. Every write goes through ``io``.
extension Connection {
    /// Writes `out`, then the file or stream body, until everything is sent or the socket is full.
    func flush() {
        if stalled { return }
        while phase != .closed {
            if outStart < out.count {
                let more = moreFollows
                let result = io.write(out.bytes(from: outStart), moreFollows: more)
                let sent: Int
                switch result {
                case .transferred(let count):
                    sent = count
                case .wouldBlock:
                    block()
                    return
                case .endOfStream, .failed:
                    close(reason: "send failed")
                    return
                }
                lastActivity = loop.now
                outStart += sent
                if outStart < out.count {
                    // A short write means the socket buffer is full; asking again would only return EAGAIN.
                    block()
                    return
                }
                out.removeAll(keepingAtMost: 256 * 1024)
                outStart = 0
            }
            switch outBody {
            case .none:
                responsesSent()
                return
            case .file(let descriptor, let offset, let remaining):
                guard sendFile(descriptor, offset: offset, remaining: remaining) else { return }
            case .stream(let producer, let remaining, let chunked):
                // While a worker produces the next block, only what is already in `out` goes out.
                guard runningCall == nil, produce(producer, remaining: remaining, chunked: chunked) else { return }
            }
        }
    }

    /// Body bytes follow what is in `out` (so the kernel may hold a partial segment for them).
    var moreFollows: Bool {
        if case .none = outBody { return false }
        return true
    }

    /// Sends part of a file; returns true to go on flushing.
    func sendFile(_ descriptor: OwnedFileDescriptor, offset: Int64, remaining: Int64) -> Bool {
        let want = Int(min(remaining, 1 << 30))
        let sent: Int
        switch io.sendFile(descriptor.rawValue, offset: offset, count: want) {
        case .transferred(let count):
            sent = count
        case .wouldBlock:
            block()
            return false
        case .endOfStream:
            // The file is shorter than the length promised in the head: the response cannot be completed.
            close(reason: "file shorter than its declared length")
            return false
        case .failed:
            close(reason: "sendfile failed")
            return false
        }
        lastActivity = loop.now
        let left = remaining - Int64(sent)
        if left == 0 {
            outBody = .none
            return true
        }
        outBody = .file(descriptor, offset: offset + Int64(sent), remaining: left)
        if sent < want {
            block()
            return false
        }
        return true
    }

    /// Has a worker produce the next block of a streamed body; returns true to go on flushing (never: the block
    /// comes back in ``streamProduced(_:)``).
    func produce(_ producer: any ResponseBodyProducer, remaining: Int64?, chunked: Bool) -> Bool {
        let blockSize = state.configuration.streamBlockSize
        let buffer: UnsafeMutableRawBufferPointer
        if let existing = streamBuffer {
            buffer = existing
        } else {
            buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 16)
            streamBuffer = buffer
        }
        let limit = remaining.map { Int(min(Int64(blockSize), $0)) } ?? blockSize
        if let staged = stalledBody, staged.body === producer, staged.body.atFaultPoint {
            // What precedes the fault point is on the wire: wait, then go on with the rest.
            staged.body.passFaultPoint()
            stalledBody = nil
            stall(staged.seconds)
            return false
        }
        call(.produce(producer, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<limit])))
        return false
    }

    /// A worker produced `count` bytes into `streamBuffer`: they go into `out`, framed when chunked.
    func streamProduced(_ count: Int) {
        guard case .stream(let producer, let remaining, let chunked) = outBody, let buffer = streamBuffer else {
            return
        }
        let limit = remaining.map { Int(min(Int64(buffer.count), $0)) } ?? buffer.count
        let produced = min(max(count, 0), limit)
        if produced == 0 {
            if remaining != nil {
                // Fewer bytes than the declared Content-Length: the client must see a cut connection.
                close(reason: "stream shorter than its declared length")
                return
            }
            finishStream(producer)
            if chunked { out.append("0\r\n\r\n") }
            return
        }
        if chunked {
            ResponseWriter.appendHex(produced, to: &out)
            out.append("\r\n")
        }
        out.append(UnsafeRawBufferPointer(rebasing: buffer[0..<produced]))
        if chunked { out.append("\r\n") }
        if let remaining {
            let left = remaining - Int64(produced)
            if left == 0 {
                finishStream(producer)
            } else {
                outBody = .stream(producer, remaining: left, chunked: chunked)
            }
        }
    }

    private func finishStream(_ producer: any ResponseBodyProducer) {
        outBody = .none
        stalledBody = nil
        producer.close()
        streamBuffer?.deallocate()
        streamBuffer = nil
    }

    func block() {
        outputBlocked = true
    }

    /// Everything queued is on the wire: those requests are complete.
    private func responsesSent() {
        if unsentResponses > 0 {
            state.inFlight.subtract(unsentResponses, ordering: .releasing)
            unsentResponses = 0
        }
        guard phase == .closing else { return }
        if lingers {
            phase = .lingering
            lastActivity = loop.now
            io.shutdownWrite()
        } else {
            close(reason: nil)
        }
    }
}
#endif
