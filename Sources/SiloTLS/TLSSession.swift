#if os(Linux)
internal import COpenSSL
import Glibc
internal import SiloHashing

/// The server side of TLS on one non-blocking, connected socket: an `SSL` handle owned by this object and freed in
/// deinit. The handshake happens inside the first reads (the accept state is set at creation), so a transport
/// drives it as it drives any read: `wantRead` waits for the socket to be readable, `wantWrite` for it to be
/// writable, and then the same call is made again.
///
/// Confined to one thread (the connection's event loop), like the socket it wraps; not Sendable. The descriptor
/// stays the caller's: freeing the session does not close it.
package final class TLSSession {
    /// What a read or write did.
    package enum Outcome: Equatable {
        /// This many bytes were read or written (more than zero).
        case transferred(Int)
        /// Nothing can go on until the socket is readable (handshake messages, or no record has arrived).
        case wantRead
        /// Nothing can go on until the socket is writable (the socket buffer is full).
        case wantWrite
        /// The peer closed the connection (close_notify, or the end of the stream).
        case closed
        /// The handshake or a record failed; the connection is unusable.
        case failed(TLSError)

        package static func == (a: Outcome, b: Outcome) -> Bool {
            switch (a, b) {
            case (.transferred(let x), .transferred(let y)): x == y
            case (.wantRead, .wantRead), (.wantWrite, .wantWrite), (.closed, .closed): true
            case (.failed(let x), .failed(let y)): x.code == y.code
            default: false
            }
        }
    }

    private let ssl: OpaquePointer
    /// The context this session was made from, kept while it lives (the `SSL` also holds a reference of its own).
    package let context: TLSContext
    private var shutDown = false

    package init(context: TLSContext, socket fd: Int32) throws {
        ERR_clear_error()
        guard let ssl = SSL_new(context.handle) else {
            throw TLSError(.setupFailed, "cannot start TLS on a connection", cause: CryptoError.fromQueue("SSL_new"))
        }
        // A socket BIO without BIO_CLOSE: the transport closes the descriptor.
        guard SSL_set_fd(ssl, fd) == 1 else {
            let reasons = CryptoError.fromQueue("SSL_set_fd")
            SSL_free(ssl)
            throw TLSError(.setupFailed, "cannot start TLS on a connection", cause: reasons)
        }
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.context = context
    }

    deinit { SSL_free(ssl) }

    /// Reads up to `count` decrypted bytes. One record at most comes from each `SSL_read`, so this goes on while
    /// OpenSSL holds bytes already received, and stops (returning what it has) when the socket would be asked again.
    package func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Outcome {
        var total = 0
        repeat {
            ERR_clear_error()
            let result = SSL_read(ssl, buffer + total, Int32(clamping: count - total))
            if result > 0 {
                total += Int(result)
                continue
            }
            let outcome = failure(result, call: "SSL_read")
            // What was read is delivered; a condition that ended the loop shows again on the next call.
            return total > 0 ? .transferred(total) : outcome
        } while total < count && SSL_has_pending(ssl) == 1
        return .transferred(total)
    }

    /// Writes up to `count` bytes; fewer only when the socket is full (the rest is `wantWrite` next time) or the
    /// connection failed. Partial writes are on, so each `SSL_write` returns after one whole record is out; after a
    /// `wantWrite` the next call must start with the same bytes (OpenSSL holds the record it could not send and
    /// sends it first; the buffer may move).
    package func write(_ bytes: UnsafeRawPointer, count: Int) -> Outcome {
        var total = 0
        while total < count {
            ERR_clear_error()
            let result = SSL_write(ssl, bytes + total, Int32(clamping: count - total))
            if result > 0 {
                total += Int(result)
                continue
            }
            let outcome = failure(result, call: "SSL_write")
            return total > 0 ? .transferred(total) : outcome
        }
        return .transferred(total)
    }

    /// OpenSSL holds received bytes not yet returned by ``read(into:count:)``: the socket may not become readable
    /// again for them, so the transport must read without waiting for it.
    package var hasBufferedInput: Bool { SSL_has_pending(ssl) == 1 }

    package var handshakeComplete: Bool { SSL_is_init_finished(ssl) == 1 }

    /// The ALPN protocol agreed on (`http/1.1`), nil when the client offered none.
    package var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// `TLSv1.3`, `TLSv1.2`.
    package var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    package var cipher: String {
        guard let current = SSL_get_current_cipher(ssl), let name = SSL_CIPHER_get_name(current) else { return "" }
        return String(cString: name)
    }

    /// Whether the handshake resumed a session (a ticket) instead of doing a full one.
    package var resumedSession: Bool { SSL_session_reused(ssl) == 1 }

    /// Sends close_notify once, if the handshake is done and the socket takes it now; never waits. Called before
    /// the transport's own close or half-close.
    package func shutdown() {
        guard !shutDown else { return }
        shutDown = true
        guard handshakeComplete else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func failure(_ result: Int32, call: String) -> Outcome {
        let savedErrno = errno
        let code = SSL_get_error(ssl, result)
        switch code {
        case silo_ssl_error_want_read():
            return .wantRead
        case silo_ssl_error_want_write():
            return .wantWrite
        case silo_ssl_error_zero_return():
            return .closed
        case silo_ssl_error_syscall():
            ERR_clear_error()
            // The end of the stream, or the peer reset it: gone either way.
            if savedErrno == 0 || savedErrno == ECONNRESET || savedErrno == EPIPE { return .closed }
            return .failed(
                TLSError(
                    .connectionFailed, "\(call) failed: \(String(cString: strerror(savedErrno)).lowercased())"))
        default:
            let reasons = CryptoError.fromQueue(call)
            return handshakeComplete
                ? .failed(TLSError(.connectionFailed, "a TLS record from the client was refused", cause: reasons))
                : .failed(TLSError(.handshakeFailed, "the TLS handshake failed", cause: reasons))
        }
    }
}
@available(*, unavailable) extension TLSSession: Sendable {}
#endif
