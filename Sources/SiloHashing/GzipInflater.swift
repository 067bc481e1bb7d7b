internal import CZlib
internal import SiloCore

/// Streaming gunzip: feed compressed chunks, receive decompressed pieces of at most `outputBufferSize` bytes.
///
/// Memory stays bounded whatever the input (one output buffer plus zlib's 32 KiB window), and `maxOutputSize`
/// guards against decompression bombs. Concatenated gzip members are decoded one after another, as `gzip -d` does.
public final class GzipInflater {
    /// Heap-allocated because zlib keeps a back pointer to the stream and checks it on every call.
    private let stream: UnsafeMutablePointer<z_stream>
    private let buffer: UnsafeMutableRawBufferPointer
    private let maxOutputSize: Int64?
    /// True between the end of a member and the first byte of the next one.
    private var atMemberEnd = false
    public private(set) var totalOut: Int64 = 0

    public init(outputBufferSize: Int = 64 * 1024, maxOutputSize: Int64? = nil) throws {
        precondition(outputBufferSize > 0 && outputBufferSize <= Int(UInt32.max))
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 16 + MAX_WBITS: expect a gzip header and trailer rather than a raw zlib stream.
        let rc = silo_inflate_init2(stream, 16 + MAX_WBITS)
        guard rc == Z_OK else {
            let error = ZlibError("inflateInit2", rc, stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw error.storageError("gzip inflater")
        }
        buffer = .allocate(byteCount: outputBufferSize, alignment: 16)
        self.maxOutputSize = maxOutputSize
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        buffer.deallocate()
    }

    /// Decompresses `input`, handing each decompressed piece to `output` (valid only during that call).
    public func feed(_ input: UnsafeRawBufferPointer, _ output: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let base = input.baseAddress, !input.isEmpty else { return }
        if atMemberEnd {
            // More bytes after a complete member: the next member of a concatenated stream (or garbage, which the
            // header check below rejects).
            let rc = inflateReset(stream)
            guard rc == Z_OK else { throw ZlibError("inflateReset", rc, stream).storageError("gunzip") }
            atMemberEnd = false
        }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = 0
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        var remaining = input.count
        while true {
            // Top up avail_in (a UInt32) from what is left of the input.
            if stream.pointee.avail_in == 0 && remaining > 0 {
                let take = min(remaining, Int(UInt32.max))
                stream.pointee.avail_in = UInt32(take)
                remaining -= take
            }
            stream.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = UInt32(buffer.count)
            let rc = inflate(stream, Z_NO_FLUSH)
            let produced = buffer.count - Int(stream.pointee.avail_out)
            if produced > 0 {
                totalOut += Int64(produced)
                if let maxOutputSize, totalOut > maxOutputSize {
                    throw StorageError(.payloadTooLarge, "gunzip: output exceeds \(maxOutputSize) bytes")
                }
                try output(UnsafeRawBufferPointer(start: buffer.baseAddress, count: produced))
            }
            switch rc {
            case Z_OK:
                break
            case Z_STREAM_END:
                if stream.pointee.avail_in == 0 && remaining == 0 {
                    atMemberEnd = true
                    return
                }
                let reset = inflateReset(stream)
                guard reset == Z_OK else { throw ZlibError("inflateReset", reset, stream).storageError("gunzip") }
            case Z_BUF_ERROR:
                // No progress possible: all input consumed and nothing more to flush. Wait for the next chunk.
                if stream.pointee.avail_in == 0 && remaining == 0 { return }
            default:
                throw ZlibError("inflate", rc, stream).storageError("gunzip")
            }
            if stream.pointee.avail_in == 0 && remaining == 0 && produced < buffer.count { return }
        }
    }

    public func feed(_ input: some Sequence<UInt8>, _ output: (UnsafeRawBufferPointer) throws -> Void) throws {
        try Array(input).withUnsafeBytes { try feed($0, output) }
    }

    /// Declares the end of the input; throws if the last gzip member is incomplete.
    public func finish() throws {
        guard atMemberEnd else {
            throw StorageError(.invalidArgument, "gunzip: the gzip data is truncated")
        }
    }
}
