internal import SiloCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a file next to the database, held while the store is open, so a second process cannot
/// open the same database as its owner. A store that is owned this way may be fronted by a cache
/// (``CachingMetadataStore``): no other process changes rows behind it.
final class ProcessLock: Sendable {
    let path: String
    /// -1 once released.
    private let fd: Mutex<Int32>

    init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StorageError(.ioError, "cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw StorageError(
                    .unavailable,
                    "\(path) is locked: another silo process is serving this database; stop it or use another --data")
            }
            throw StorageError(.ioError, "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        self.fd = Mutex(fd)
    }

    /// Closing the descriptor releases the lock. Later calls do nothing.
    func release() {
        fd.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit { release() }
}
