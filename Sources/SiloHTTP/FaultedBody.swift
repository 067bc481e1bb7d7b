#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Any response body as a producer with a fault point: it hands out the body's bytes in order, at most `faultAfter`
/// of them before the fault point, where it throws an ``HTTPServerError`` (`.injectedFault`) until ``passFaultPoint()`` is called.
/// Transports stage ``TransportFault/breakBody(afterBytes:)`` (the throw closes the connection) and
/// ``TransportFault/stallBody(afterBytes:seconds:)`` (they check ``atFaultPoint`` first) with it, whatever kind the
/// body is. Only faulted responses take this path: a file is read here instead of being sent with sendfile.
package final class FaultedBody: ResponseBodyProducer {
    private enum Source {
        case bytes([UInt8], offset: Int)
        case file(OwnedFileDescriptor, offset: Int64, end: Int64)
        case stream(any ResponseBodyProducer)
        case empty
    }

    private var source: Source
    /// Bytes still to hand out before the fault point; nil once it has been passed.
    private var untilFault: Int64?
    /// The length the response declares: the transport sends this in the head, so a cut is visible to the client.
    package let length: Int64?

    package init(_ body: ResponseBody, faultAfter: Int64) {
        length = body.length
        untilFault = max(0, faultAfter)
        switch body {
        case .empty: source = .empty
        case .bytes(let bytes): source = .bytes(bytes, offset: 0)
        case .file(let descriptor, let offset, let length):
            source = .file(descriptor, offset: offset, end: offset + length)
        case .stream(_, let producer): source = .stream(producer)
        }
    }

    /// The bytes before the fault point are handed out and the point was not passed yet.
    package var atFaultPoint: Bool { untilFault == 0 }

    /// Goes on past the fault point (after a stall).
    package func passFaultPoint() { untilFault = nil }

    package func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if untilFault == 0 { throw HTTPServerError(.injectedFault, "response body cut at a staged fault") }
        let want = untilFault.map { Int(min(Int64(buffer.count), $0)) } ?? buffer.count
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
        let count: Int
        switch source {
        case .empty:
            count = 0
        case .bytes(let bytes, let offset):
            count = min(want, bytes.count - offset)
            bytes.withUnsafeBytes { all in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: all[offset..<(offset + count)]))
            }
            source = .bytes(bytes, offset: offset + count)
        case .file(let descriptor, let offset, let end):
            let n = Int(min(Int64(want), end - offset))
            guard n > 0, let base = target.baseAddress else {
                count = 0
                break
            }
            var read: Int
            repeat { read = pread(descriptor.rawValue, base, n, off_t(offset)) } while read < 0 && errno == EINTR
            guard read >= 0 else { throw SystemCallError(call: "pread", errno: errno) }
            count = read
            source = .file(descriptor, offset: offset + Int64(read), end: end)
        case .stream(let producer):
            count = try producer.produce(into: target)
        }
        if let left = untilFault { untilFault = left - Int64(count) }
        return count
    }

    package func close() {
        if case .stream(let producer) = source { producer.close() }
        source = .empty
    }
}
