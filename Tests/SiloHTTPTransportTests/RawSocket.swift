import SiloTesting

#if canImport(Glibc)
import Glibc
#endif

/// A bare TCP connection for tests that check bytes on the wire the HTTP test client would hide (interim
/// responses, what the server sends before closing, how fast it produces).
final class RawSocket {
    private(set) var fd: Int32 = -1

    /// - Parameter source: a loopback address to connect from (`127.0.0.2`: another client, for per-client limits).
    init(port: Int, receiveTimeoutSeconds: Int = 5, source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError("socket failed") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw RawSocketError("bind to \(source) failed") }
        }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw RawSocketError("connect failed") }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    /// Closes with a TCP reset (SO_LINGER 0): the server sees the connection fail at once, whatever it was doing.
    func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    /// Shrinks the receive buffer (before much data arrives) so a slow reader pushes back sooner.
    func setReceiveBuffer(_ bytes: Int32) {
        var size = bytes
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Half-closes: the server reads end of stream after what was sent.
    func finishWriting() { _ = shutdown(fd, Int32(SHUT_WR)) }

    func write(_ text: String) throws { try write(Array(text.utf8)) }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return send(fd, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw RawSocketError("send failed") }
            offset += sent
        }
    }

    /// Up to `max` bytes; empty at end of stream; throws on timeout or error.
    func readSome(max: Int = 64 * 1024) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 { throw RawSocketError(errno == EAGAIN ? "timed out" : "recv failed (errno \(errno))") }
        return Array(buffer[0..<count])
    }

    /// Everything until the server closes the connection (or `limit` bytes).
    func readUntilClose(limit: Int = 16 * 1024 * 1024) throws -> [UInt8] {
        var all: [UInt8] = []
        while all.count < limit {
            let piece = try readSome()
            if piece.isEmpty { break }
            all += piece
        }
        return all
    }

    /// Reads until `text` appears in what was received; returns everything received.
    func readUntil(_ text: String, limit: Int = 1024 * 1024) throws -> String {
        var all: [UInt8] = []
        while all.count < limit {
            let piece = try readSome()
            if piece.isEmpty { break }
            all += piece
            if String(decoding: all, as: UTF8.self).contains(text) { break }
        }
        return String(decoding: all, as: UTF8.self)
    }
}

struct RawSocketError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
