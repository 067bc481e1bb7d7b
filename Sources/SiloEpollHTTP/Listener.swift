#if os(Linux)
internal import CLinux
import Glibc
import SiloHTTP

/// The listening socket: bound, listening and non-blocking. Every event loop registers it with EPOLLEXCLUSIVE, so
/// an idle loop takes the next connection; with SO_REUSEPORT listeners instead, the kernel would hash a
/// connection to one loop even while that loop is blocked in a handler, and a second server could bind the
/// same port without an error.
enum Listener {
    /// Opens the listener; returns its descriptor (owned by the caller), the bound port, and the local end every
    /// connection will have — nil when bound to a wildcard address, where each connection has its own.
    static func open(host: String, port: Int, backlog: Int) throws -> (fd: Int32, port: Int, local: LocalEndpoint?) {
        let shown = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        guard let address = SocketAddress(numericHost: host, port: port) else {
            throw HTTPServerError(
                .invalidConfiguration, "cannot bind \(shown): host is not a numeric IPv4 or IPv6 address")
        }
        let fd = socket(
            address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0)
        guard fd >= 0 else {
            throw HTTPServerError(
                .startFailed, "cannot open a socket for \(shown)", cause: SystemCallError.now("socket"))
        }
        var on: Int32 = 1
        // A restarted server can bind while old connections linger in TIME_WAIT (it does not allow two listeners).
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockaddr { bind(fd, $0, $1) }
        if bound != 0 {
            let code = errno
            _ = close(fd)
            let reason = String(cString: strerror(code)).lowercased()
            throw HTTPServerError(
                code == EADDRINUSE ? .addressInUse : .bindFailed, "cannot bind \(shown): \(reason)",
                cause: SystemCallError(call: "bind", errno: code))
        }
        guard listen(fd, Int32(backlog)) == 0 else {
            let error = SystemCallError.now("listen")
            _ = close(fd)
            throw HTTPServerError(.startFailed, "cannot listen on \(shown)", cause: error)
        }
        let named = localEndpoint(fd)
        // A wildcard address (0.0.0.0, ::) is no one address: each connection's own is asked for at its accept.
        let fixed = named.flatMap { $0.address == PeerAddress(high: 0, low: 0) || $0.address == mappedAny ? nil : $0 }
        return (fd, named?.port ?? port, fixed)
    }

    private static let mappedAny = PeerAddress(high: 0, low: 0xFFFF_0000_0000)

    /// The local end of a socket (getsockname); nil when it cannot be told.
    static func localEndpoint(_ fd: Int32) -> LocalEndpoint? {
        var bytes = (UInt64(0), UInt64(0))
        var port: UInt16 = 0
        let named = withUnsafeMutableBytes(of: &bytes) {
            silo_local_address(fd, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), &port)
        }
        guard named == 0 else { return nil }
        return LocalEndpoint(address: withUnsafeBytes(of: &bytes) { PeerAddress(bytes: $0) }, port: Int(port))
    }
}

extension SystemCallError {
    /// The error of `call` from the current errno.
    static func now(_ call: String) -> SystemCallError { SystemCallError(call: call, errno: Glibc.errno) }
}
#endif
