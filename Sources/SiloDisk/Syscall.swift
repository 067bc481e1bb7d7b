internal import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs one syscall the one way SiloDisk does: errno read at once, EINTR retried, failure thrown as a StorageError
/// whose cause names the call and the path. EBADF and EFAULT mean a bug here, so they stop the process.
@inline(__always)
func syscall<Result: FixedWidthInteger>(_ call: String, _ path: String, _ body: () -> Result) throws -> Result {
    // With no errno tolerated, nil is never returned.
    try syscall(call, path, tolerating: 0, body)!
}

/// ``syscall(_:_:_:)``, except that a failure with errno `tolerated` returns nil instead of throwing: for outcomes
/// that are expected and frequent (`mkdir` of a fan-out directory that exists), which are not worth an error.
@inline(__always)
func syscall<Result: FixedWidthInteger>(
    _ call: String, _ path: String, tolerating tolerated: Int32, _ body: () -> Result
) throws -> Result? {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        if code == tolerated && tolerated != 0 { return nil }
        precondition(code != EBADF && code != EFAULT, "\(call)(\(path)) failed with errno \(code): a bug in SiloDisk")
        throw SystemCallError(call: call, path: path, errno: code).storageError()
    }
}

/// `close` is never retried: on Linux the descriptor is gone even when it reports EINTR.
func closeDescriptor(_ fd: Int32, _ path: String) {
    if Glibc.close(fd) == -1 {
        let code = errno
        precondition(code != EBADF, "close(\(path)) failed with EBADF: a bug in SiloDisk")
    }
}

extension SystemCallError {
    func storageError() -> StorageError {
        let code: StorageError.Code
        switch errno {
        case ENOENT, ENOTDIR: code = .notFound
        // The server's own files refusing the server is a server fault (500), never the caller's missing permission.
        case EACCES, EPERM, EROFS: code = .ioError
        // Out of space is a server condition (507), not a fault of the bytes.
        case ENOSPC, EDQUOT: code = .insufficientStorage
        default: code = .ioError
        }
        return StorageError(code, description, cause: self)
    }
}
