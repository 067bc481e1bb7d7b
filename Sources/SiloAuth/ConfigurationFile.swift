#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the small files auth is configured from (key sets, the HS256 secret, admin keys).
enum ConfigurationFile {
    /// Key and secret files are small; a larger one is a mistake (or a device), not something to read whole.
    static let maxBytes = 1 << 20

    /// The whole file, or an ``AuthError/Code-swift.struct/invalidConfiguration`` naming `path` and the reason.
    static func contents(of path: String, what: String) throws(AuthError) -> [UInt8] {
        let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw failure(what, path, "open", errno) }
        defer { _ = close(fd) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = retryingEINTR { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            if n < 0 { throw failure(what, path, "read", errno) }
            if n == 0 { break }
            contents += buffer.prefix(n)
            guard contents.count <= maxBytes else {
                throw AuthError(.invalidConfiguration, "\(what) '\(path)' is larger than \(maxBytes) bytes")
            }
        }
        return contents
    }

    private static func retryingEINTR<T: BinaryInteger>(_ call: () -> T) -> T {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }

    private static func failure(_ what: String, _ path: String, _ call: String, _ code: Int32) -> AuthError {
        AuthError(.invalidConfiguration, "cannot \(call) \(what) '\(path)': \(String(cString: strerror(code)))")
    }
}
