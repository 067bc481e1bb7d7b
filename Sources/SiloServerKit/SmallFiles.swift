#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes all of `bytes` to `fd`, again after short writes and EINTR; false on any other failure (errno says why).
package func writeAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}

/// Creates `path` (it must not exist; mode 0600) holding `bytes`, fsync'ed first when `durable`; false on failure.
package func createFile(_ path: String, _ bytes: [UInt8], durable: Bool) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return writeAll(bytes, to: fd) && (!durable || fsync(fd) == 0)
}

/// The whole of the file at `path`, or nil if it cannot be read or is larger than `limit` bytes.
package func readSmallFile(_ path: String, limit: Int) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_size >= 0, info.st_size <= limit else { return nil }
    var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
    var filled = 0
    let ok = bytes.withUnsafeMutableBytes { buffer -> Bool in
        while filled < buffer.count {
            let n = pread(fd, buffer.baseAddress! + filled, buffer.count - filled, off_t(filled))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            filled += n
        }
        return true
    }
    return ok ? bytes : nil
}
