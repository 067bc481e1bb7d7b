internal import SiloCore

#if canImport(Glibc)
import Glibc
#endif

/// Writes one blob file at a moving offset. Owns its descriptor; closes it in `close()` or deinit.
final class DiskBlobWriter: BlobWriter {
    private let syscalls: Syscalls
    private let path: String
    private let directory: String
    private var fd: Int32
    private(set) var offset: Int64
    /// A new file's directory entry must be made durable by the first `sync()`, or a crash could lose the file.
    private var directoryNeedsSync: Bool
    /// After a failed write the file's tail is unknown, so the writer refuses further use; the caller reopens at
    /// its last synced offset, which truncates whatever the failure left.
    private var failure: StorageError?
    /// Everything before this offset has been handed to the kernel's writeback (see ``writeBehindBytes``).
    private var writebackStart: Int64
    /// Bytes written through the page cache since `writebackStart`: direct writes leave nothing to write back.
    private var cachedSinceWriteback: Int64 = 0
    /// Whether the descriptor has `O_DIRECT` set now, and whether it may (the filesystem or device refused it).
    private var directIO = false
    private var directIOUsable = true

    /// Once this many written bytes are waiting, the writer asks the kernel to start writing them out. The device then
    /// works while the upload goes on, so `sync()` at the end waits for at most this much instead of the whole blob
    /// (measured on a 256 MiB upload: the final fdatasync went from 117 ms to 1.4 ms). Durability still comes only from `sync()`;
    /// writeback errors stay recorded for it to report.
    static let writeBehindBytes: Int64 = 4 << 20

    /// A write whose buffer address, file offset and length are multiples of this (and that is at least
    /// ``directIOMinimum`` long) goes straight from the caller's buffer to the device (`O_DIRECT`): no copy into the
    /// page cache and no writeback work later, which measured on a 256 MiB upload took more CPU than the MD5 of the
    /// same bytes. 4 KiB satisfies every common logical block size; a device that wants more answers EINVAL, and the
    /// writer then stays with the page cache. Durability is unchanged: the device may still hold the bytes in a
    /// volatile cache and the file's size is not yet journaled, so only `sync()` makes them durable.
    static let directIOAlignment = 4096
    static let directIOMinimum = 64 << 10

    init(syscalls: Syscalls, path: String, directory: String, fd: Int32, offset: Int64, isNew: Bool) {
        self.syscalls = syscalls
        self.path = path
        self.directory = directory
        self.fd = fd
        self.offset = offset
        self.writebackStart = offset
        self.directoryNeedsSync = isNew
    }

    deinit { close() }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        try checkUsable("write")
        guard let base = bytes.baseAddress else { return }
        var done = 0
        do {
            while done < bytes.count {
                // Decided per call: a short write can leave the rest unaligned.
                let direct = try useDirectIO(directIOFits(base + done, bytes.count - done))
                let written: Int
                do {
                    written = try syscall("pwrite", path) {
                        syscalls.pwrite(fd, base + done, bytes.count - done, off_t(offset))
                    }
                } catch let error as StorageError where direct && (error.cause as? SystemCallError)?.errno == EINVAL {
                    // The device wants a coarser alignment than 4 KiB: the page cache from now on.
                    directIOUsable = false
                    continue
                }
                guard written > 0 else {
                    throw StorageError(.ioError, "pwrite(\(path)) wrote nothing at offset \(offset)")
                }
                done += written
                offset += Int64(written)
                if !direct {
                    cachedSinceWriteback += Int64(written)
                } else if cachedSinceWriteback == 0 {
                    writebackStart = offset
                }
            }
        } catch let error as StorageError {
            failure = error
            throw error
        }
        if cachedSinceWriteback >= Self.writeBehindBytes {
            // A hint: failure (EIO, a filesystem without it) changes nothing; sync() reports real write errors.
            _ = syscalls.startWriteback(fd, writebackStart, offset - writebackStart)
            writebackStart = offset
            cachedSinceWriteback = 0
        }
    }

    private func directIOFits(_ address: UnsafeRawPointer, _ count: Int) -> Bool {
        let alignment = Self.directIOAlignment
        return directIOUsable && count >= Self.directIOMinimum && count % alignment == 0
            && Int(offset) % alignment == 0 && UInt(bitPattern: address) % UInt(alignment) == 0
    }

    /// Sets or clears `O_DIRECT` on the descriptor if it is not already so; returns whether it is set. A filesystem
    /// without direct I/O refuses to set it (EINVAL), and the writer stays with the page cache.
    private func useDirectIO(_ wanted: Bool) throws -> Bool {
        guard wanted != directIO else { return directIO }
        if syscalls.setDirectIO(fd, wanted) == 0 {
            directIO = wanted
        } else if wanted {
            directIOUsable = false
        } else {
            // Clearing it cannot fail short of a bad descriptor; writing on in direct mode would misalign.
            throw SystemCallError(call: "fcntl(F_SETFL)", path: path, errno: errno).storageError()
        }
        return directIO
    }

    /// Appends the first `length` bytes of the open file `source` with `copy_file_range`. Where the kernel cannot
    /// copy between these files (another filesystem, a kernel or filesystem without the call), the rest goes through
    /// a 256 KiB buffer instead. Returns whether the kernel copied every byte.
    func appendCopy(of source: Int32, sourcePath: String, length: Int64) throws -> Bool {
        try checkUsable("copy into")
        var sourceOffset: Int64 = 0
        do {
            // The kernel's copy and the buffered fallback go through the page cache.
            _ = try useDirectIO(false)
            while sourceOffset < length {
                var targetOffset = offset
                let copied: Int
                do {
                    copied = try syscall("copy_file_range", path) {
                        syscalls.copyFileRange(
                            source, &sourceOffset, fd, &targetOffset, Int(min(length - sourceOffset, 1 << 30)))
                    }
                } catch let error as StorageError where Self.kernelCannotCopy(error) {
                    try copyThroughBuffer(source, sourcePath, from: sourceOffset, to: length)
                    return false
                }
                guard copied > 0 else {
                    throw StorageError(.corrupt, "\(sourcePath) ended at \(sourceOffset) of \(length) bytes")
                }
                offset += Int64(copied)
            }
        } catch let error as StorageError {
            failure = failure ?? error
            throw error
        }
        return true
    }

    /// The errors that mean "not between these files", not "the copy failed".
    private static func kernelCannotCopy(_ error: StorageError) -> Bool {
        guard let cause = error.cause as? SystemCallError else { return false }
        return [EXDEV, ENOSYS, EOPNOTSUPP, EINVAL].contains(cause.errno)
    }

    private func copyThroughBuffer(_ source: Int32, _ sourcePath: String, from start: Int64, to end: Int64) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        var position = start
        while position < end {
            let want = Int(min(Int64(buffer.count), end - position))
            let n = try syscall("pread", sourcePath) {
                syscalls.pread(source, buffer.baseAddress!, want, off_t(position))
            }
            guard n > 0 else { throw StorageError(.corrupt, "\(sourcePath) ended at \(position) of \(end) bytes") }
            try write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            position += Int64(n)
        }
    }

    func sync() throws {
        try checkUsable("sync")
        do {
            _ = try syscall("fdatasync", path) { syscalls.fdatasync(fd) }
            if directoryNeedsSync {
                try syncDirectory(directory, syscalls)
                directoryNeedsSync = false
            }
        } catch let error as StorageError {
            // After a failed fsync the kernel may have dropped the dirty pages: nothing since the last sync is safe.
            failure = error
            throw error
        }
    }

    func close() {
        guard fd >= 0 else { return }
        closeDescriptor(fd, path)
        fd = -1
    }

    private func checkUsable(_ operation: String) throws {
        if let failure {
            throw StorageError(.ioError, "\(operation) on blob \(path) after an earlier failure", cause: failure)
        }
        guard fd >= 0 else { throw StorageError(.internalError, "\(operation) on closed writer of \(path)") }
    }
}

/// fsync of a directory, so entries created or removed in it survive power loss.
func syncDirectory(_ directory: String, _ syscalls: Syscalls) throws {
    let fd = try syscall("open", directory) {
        directory.withCString { syscalls.open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
    }
    defer { closeDescriptor(fd, directory) }
    _ = try syscall("fsync", directory) { syscalls.fsync(fd) }
}
