#if os(Linux)
internal import CLinux
import Glibc

/// What one transfer through a ``ConnectionIO`` did.
enum IOResult {
    /// This many bytes moved (at least one; fewer than asked means the socket is full, or empty, for now).
    case transferred(Int)
    /// Nothing can move until the socket is ready again (EAGAIN): wait for the epoll event.
    case wouldBlock
    /// A read found the end of the stream (the client closed its side); a file send found the file shorter than
    /// asked.
    case endOfStream
    /// The transfer failed with this errno; the connection is done.
    case failed(Int32)
}

/// The one seam every byte of a connection crosses: a ``Connection`` reads, writes, sends files, shuts down and
/// closes only through this, never with a system call of its own, so a layer such as TLS wraps a connection by
/// wrapping its `ConnectionIO` and nothing else. Epoll registration stays with the loop and uses ``fd``, the
/// descriptor readiness is reported for.
///
/// Contract for a wrapper: `read` and `write` are non-blocking and report `wouldBlock` rather than wait; a wrapper
/// that must write to read (a handshake) or holds plaintext the socket no longer signals has to keep that from
/// the connection, which asks only when epoll reports the descriptor ready. `sendFile` may copy through a buffer
/// where the kernel cannot send the file itself. Called on the connection's loop thread only.
protocol ConnectionIO {
    /// The descriptor epoll watches for this connection.
    var fd: Int32 { get }
    /// Reads into `buffer` (at most its count).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult
    /// Writes from `bytes`; `moreFollows` says more bytes follow at once, so a partial segment may wait for them.
    func write(_ bytes: UnsafeRawBufferPointer, moreFollows: Bool) -> IOResult
    /// Sends up to `count` bytes of `file` from `offset` (which the file's own position does not move).
    func sendFile(_ file: Int32, offset: Int64, count: Int) -> IOResult
    /// No more bytes will be written; reading goes on (a lingering close).
    func shutdownWrite()
    /// The coming ``close()`` resets the connection and drops what is unsent (a staged fault).
    func resetOnClose()
    /// Closes the descriptor; called once, after the loop has removed it from epoll.
    func close()
    /// Bytes received that no readiness event will announce (TLS: the rest of a record held inside OpenSSL); the
    /// loop reads them without waiting for epoll.
    var hasBufferedInput: Bool { get }
    /// The last `read` answered `wouldBlock` because it must write first (a TLS handshake answer that did not fit
    /// the socket buffer): the connection waits for EPOLLOUT instead of EPOLLIN, then reads again.
    var readWaitsForWritable: Bool { get }
    /// Bytes cross the socket encrypted (TLS).
    var isSecure: Bool { get }
    /// Epoll reports the descriptor readable only once `bytes` are waiting (1: as soon as one is). Only a promise
    /// of that many bytes to come may raise it, or the connection waits for bytes that never come; a wrapper that
    /// holds input of its own (TLS: a record's plaintext) ignores it.
    func reportReadable(atLeast bytes: Int)
}

extension ConnectionIO {
    var hasBufferedInput: Bool { false }
    var readWaitsForWritable: Bool { false }
    var isSecure: Bool { false }
    func reportReadable(atLeast bytes: Int) {}
}

/// A plain TCP socket: each call is one system call (EINTR retried).
struct SocketIO: ConnectionIO {
    let fd: Int32

    /// Takes ownership of an accepted, non-blocking socket.
    init(accepted fd: Int32) {
        self.fd = fd
        var on: Int32 = 1
        // Responses go out in one write per exchange; Nagle would hold the next one for an ACK.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    func reportReadable(atLeast bytes: Int) {
        // SO_RCVLOWAT: the kernel caps it at half the largest receive buffer and grows the buffer to fit.
        var value = Int32(clamping: max(1, bytes))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        guard let base = buffer.baseAddress else { return .endOfStream }
        while true {
            let count = Glibc.read(fd, base, buffer.count)
            if count > 0 { return .transferred(count) }
            if count == 0 { return .endOfStream }
            if errno == EINTR { continue }
            return Self.failure(errno)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, moreFollows: Bool) -> IOResult {
        guard let base = bytes.baseAddress else { return .transferred(0) }
        let flags = Int32(MSG_NOSIGNAL) | (moreFollows ? Int32(MSG_MORE) : 0)
        while true {
            let sent = send(fd, base, bytes.count, flags)
            if sent >= 0 { return .transferred(sent) }
            if errno == EINTR { continue }
            return Self.failure(errno)
        }
    }

    func sendFile(_ file: Int32, offset: Int64, count: Int) -> IOResult {
        var position = off_t(offset)
        while true {
            let sent = sendfile(fd, file, &position, count)
            if sent > 0 { return .transferred(sent) }
            if sent == 0 { return .endOfStream }
            if errno == EINTR { continue }
            return Self.failure(errno)
        }
    }

    func shutdownWrite() {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    func resetOnClose() {
        // SO_LINGER with a zero timeout makes close() send RST and drop unsent data.
        var option = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    func close() {
        _ = Glibc.close(fd)
    }

    static func failure(_ code: Int32) -> IOResult {
        code == EAGAIN || code == EWOULDBLOCK ? .wouldBlock : .failed(code)
    }
}
#endif
