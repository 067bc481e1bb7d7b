internal import CZlib
internal import SiloCore

/// Streaming gzip compression, the mirror of ``GzipInflater`` (tests, and `Accept-Encoding: gzip` responses).
public final class GzipDeflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let buffer: UnsafeMutableRawBufferPointer
    private var finished = false

    /// - Parameter level: 0–9, or -1 for zlib's default (6).
    public init(level: Int32 = -1, outputBufferSize: Int = 64 * 1024) throws {
        precondition(outputBufferSize > 0 && outputBufferSize <= Int(UInt32.max))
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = silo_deflate_init2(stream, level, 16 + MAX_WBITS)
        guard rc == Z_OK else {
            let error = ZlibError("deflateInit2", rc, stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw error.storageError("gzip deflater")
        }
        buffer = .allocate(byteCount: outputBufferSize, alignment: 16)
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        buffer.deallocate()
    }

    public func feed(_ input: UnsafeRawBufferPointer, _ output: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(!finished, "GzipDeflater.feed after finish")
        guard let base = input.baseAddress, !input.isEmpty else { return }
        var next = base
        var remaining = input.count
        while remaining > 0 {
            let take = min(remaining, Int(UInt32.max))
            stream.pointee.next_in = UnsafeMutablePointer(mutating: next.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = UInt32(take)
            try run(Z_NO_FLUSH, output)
            next += take
            remaining -= take
        }
        stream.pointee.next_in = nil
    }

    /// Flushes the rest and writes the gzip trailer.
    public func finish(_ output: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(!finished, "GzipDeflater.finish called twice")
        finished = true
        try run(Z_FINISH, output)
    }

    /// Runs deflate until it has taken all input (Z_NO_FLUSH) or ended the stream (Z_FINISH).
    private func run(_ flush: Int32, _ output: (UnsafeRawBufferPointer) throws -> Void) throws {
        while true {
            stream.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = UInt32(buffer.count)
            let rc = deflate(stream, flush)
            guard rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR else {
                throw ZlibError("deflate", rc, stream).storageError("gzip")
            }
            let produced = buffer.count - Int(stream.pointee.avail_out)
            if produced > 0 { try output(UnsafeRawBufferPointer(start: buffer.baseAddress, count: produced)) }
            if rc == Z_STREAM_END { return }
            // A full output buffer means deflate may have more to give; otherwise it has consumed everything.
            if flush == Z_NO_FLUSH && stream.pointee.avail_out > 0 && stream.pointee.avail_in == 0 { return }
        }
    }

    /// Compresses `bytes` in one call.
    public static func compress(_ bytes: some Sequence<UInt8>, level: Int32 = -1) throws -> [UInt8] {
        let deflater = try GzipDeflater(level: level)
        var out = [UInt8]()
        let append: (UnsafeRawBufferPointer) -> Void = { out.append(contentsOf: $0) }
        try Array(bytes).withUnsafeBytes { try deflater.feed($0, append) }
        try deflater.finish(append)
        return out
    }
}
