internal import SiloCore

#if canImport(Glibc)
import Glibc
#endif

/// Reads one blob file by offset (pread), so one reader can serve ranges in any order.
final class DiskBlobReader: BlobReader {
    private let syscalls: Syscalls
    private let path: String
    private var fd: Int32
    let size: Int64

    init(syscalls: Syscalls, path: String, fd: Int32, size: Int64) {
        self.syscalls = syscalls
        self.path = path
        self.fd = fd
        self.size = size
    }

    deinit {
        if fd >= 0 { closeDescriptor(fd, path) }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard fd >= 0 else { throw StorageError(.internalError, "read from \(path) after its descriptor was taken") }
        guard offset >= 0 else { throw StorageError(.invalidArgument, "negative read offset \(offset) in \(path)") }
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        return try syscall("pread", path) { syscalls.pread(fd, base, buffer.count, off_t(offset)) }
    }

    func takeFileDescriptor() -> Int32? {
        guard fd >= 0 else { return nil }
        defer { fd = -1 }
        return fd
    }
}
