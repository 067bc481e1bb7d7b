#if os(Linux)
import Glibc
import SiloCore
import SiloTLS

/// HTTPS through the ``ConnectionIO`` seam: a ``TLSSession`` over the plain ``SocketIO`` (docs/tls.md). The
/// handshake happens inside the first reads; what it needs from the socket shows as ``readWaitsForWritable``, and
/// decrypted bytes OpenSSL still holds as ``hasBufferedInput``.
///
/// `sendFile` cannot use sendfile (the kernel would put the plain bytes on the wire): it reads the file a block at
/// a time with pread into a buffer of ``fileBlockSize`` bytes and encrypts from there, until the count is sent or
/// the socket is full. The buffer is dropped at the next read (the response is out by then), so an idle
/// connection holds none.
final class TLSConnectionIO: ConnectionIO {
    /// One pread per 64 KiB: four TLS records.
    static let fileBlockSize = 64 * 1024

    private let socket: SocketIO
    private let session: TLSSession
    private let logger: Logger
    private(set) var readWaitsForWritable = false
    private var fileBlock: UnsafeMutableRawBufferPointer?
    /// What `fileBlock` holds: bytes [offset, offset + count) of `file`, so a write the socket refused is retried
    /// from memory.
    private var cached: (file: Int32, offset: Int64, count: Int)?
    private var resets = false

    var fd: Int32 { socket.fd }
    var isSecure: Bool { true }

    /// Takes ownership of an accepted, non-blocking socket and starts TLS on it with `context`.
    init(accepted fd: Int32, context: TLSContext, logger: Logger) throws {
        socket = SocketIO(accepted: fd)
        session = try TLSSession(context: context, socket: fd)
        self.logger = logger
    }

    deinit { fileBlock?.deallocate() }

    var hasBufferedInput: Bool { session.hasBufferedInput }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        if let block = fileBlock {
            block.deallocate()
            fileBlock = nil
            cached = nil
        }
        guard let base = buffer.baseAddress else { return .endOfStream }
        readWaitsForWritable = false
        switch session.read(into: base, count: buffer.count) {
        case .transferred(let count): return .transferred(count)
        case .wantRead: return .wouldBlock
        case .wantWrite:
            readWaitsForWritable = true
            return .wouldBlock
        case .closed: return .endOfStream
        case .failed(let error): return failed(error)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, moreFollows: Bool) -> IOResult {
        guard let base = bytes.baseAddress else { return .transferred(0) }
        switch session.write(base, count: bytes.count) {
        case .transferred(let count): return .transferred(count)
        case .wantWrite: return .wouldBlock
        // Writing never needs a read once the handshake is done (renegotiation is off), and nothing is written
        // before that (an answer follows a request, which follows the handshake).
        case .wantRead: return .failed(EPROTO)
        case .closed: return .failed(EPIPE)
        case .failed(let error): return failed(error)
        }
    }

    func sendFile(_ file: Int32, offset: Int64, count: Int) -> IOResult {
        var sent = 0
        while sent < count {
            let position = offset + Int64(sent)
            let block =
                fileBlock ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.fileBlockSize, alignment: 16)
            fileBlock = block
            var available = 0
            if let cached, cached.file == file, position >= cached.offset,
                position < cached.offset + Int64(cached.count)
            {
                let skip = Int(position - cached.offset)
                if skip > 0 {
                    // Keep the unsent rest at the front (a refused write resumes with the same bytes).
                    memmove(block.baseAddress!, block.baseAddress! + skip, cached.count - skip)
                }
                available = cached.count - skip
            }
            let want = min(Self.fileBlockSize, count - sent)
            if available < want {
                let read = pread(
                    file, block.baseAddress! + available, want - available, off_t(position) + off_t(available))
                if read < 0 {
                    if errno == EINTR { continue }
                    let code = errno
                    return sent > 0 ? .transferred(sent) : .failed(code)
                }
                available += read
                if available == 0 { return sent > 0 ? .transferred(sent) : .endOfStream }
            }
            cached = (file, position, available)
            switch write(UnsafeRawBufferPointer(start: block.baseAddress, count: available), moreFollows: true) {
            case .transferred(let written):
                sent += written
                if written < available { return .transferred(sent) }
            case .wouldBlock:
                return sent > 0 ? .transferred(sent) : .wouldBlock
            case let other:
                return sent > 0 ? .transferred(sent) : other
            }
        }
        return .transferred(sent)
    }

    func shutdownWrite() {
        session.shutdown()
        socket.shutdownWrite()
    }

    func resetOnClose() {
        resets = true
        socket.resetOnClose()
    }

    func close() {
        // A close that is not a staged reset says so first (close_notify, if the socket takes it now).
        if !resets { session.shutdown() }
        socket.close()
    }

    /// A failed handshake or record: worth a line at debug, never more (anyone can send garbage).
    private func failed(_ error: TLSError) -> IOResult {
        logger.debug(
            error.code == .handshakeFailed ? "tls handshake failed" : "tls connection failed",
            metadata: ["silo.error": error.cause.map { "\(error.message): \($0)" } ?? error.message])
        return .failed(EPROTO)
    }
}
@available(*, unavailable) extension TLSConnectionIO: Sendable {}
#endif
