public import SiloCore

#if canImport(Glibc)
import Glibc
#endif

/// A ``BlobStore`` on the local filesystem: one file per blob at `<root>/ab/cd/abcd…`, named only by its BlobID.
///
/// Two levels of 256-way fan-out keep directories small. New files and directories are made durable with an fsync
/// of their parent directory; the store itself keeps no state beyond the root path, so it is trivially Sendable.
public final class DiskBlobStore: BlobStore, BlobListing {
    public let root: String
    private let syscalls: Syscalls

    /// Opens (creating if needed) a blob store rooted at `root`, e.g. `<data>/blobs`.
    /// An open descriptor keeps an unlinked file readable.
    public var readersSurviveDeletion: Bool { true }

    public convenience init(root: String) throws {
        try self.init(root: root, syscalls: .system)
    }

    @_spi(Testing) public init(root: String, syscalls: Syscalls) throws {
        var trimmed = root
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.root = trimmed
        self.syscalls = syscalls
        try makeDirectories(trimmed)
    }

    public func makeWriter(_ id: BlobID, at offset: Int64) throws -> any BlobWriter {
        guard offset >= 0 else { throw StorageError(.invalidArgument, "negative offset \(offset) for blob \(id)") }
        let (directory, path) = location(of: id)
        if offset == 0 { return try newWriter(id) }
        // Continuing a resumable upload: the file must exist and hold at least `offset` bytes.
        let fd: Int32
        do {
            fd = try syscall("open", path) { path.withCString { syscalls.open($0, O_WRONLY | O_CLOEXEC, 0) } }
        } catch let error as StorageError where error.code == .notFound {
            throw StorageError(
                .corrupt, "blob \(id) is missing; cannot continue writing at offset \(offset)", cause: error)
        }
        let writer = DiskBlobWriter(
            syscalls: syscalls, path: path, directory: directory, fd: fd, offset: offset, isNew: false)
        let size = try fileSize(fd, path)
        guard size >= offset else {
            throw StorageError(.corrupt, "blob \(id) holds \(size) bytes; cannot continue writing at offset \(offset)")
        }
        // Drop whatever a crash left past the last acknowledged offset.
        if size > offset { _ = try syscall("ftruncate", path) { syscalls.ftruncate(fd, off_t(offset)) } }
        return writer
    }

    /// A writer of `id` from its first byte: the file created (with its fan-out directories) or truncated.
    func newWriter(_ id: BlobID) throws -> DiskBlobWriter {
        let (directory, path) = location(of: id)
        let create = { [syscalls] in
            try syscall("open", path) {
                path.withCString { syscalls.open($0, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600) }
            }
        }
        let fd: Int32
        do {
            fd = try create()
        } catch let error as StorageError where error.code == .notFound {
            // First blob in this fan-out directory: create it (durably) and try again.
            try makeFanOut(id)
            fd = try create()
        }
        // Construct the owner first so the descriptor is closed on any failure below.
        let writer = DiskBlobWriter(
            syscalls: syscalls, path: path, directory: directory, fd: fd, offset: 0, isNew: true)
        _ = try syscall("ftruncate", path) { syscalls.ftruncate(fd, 0) }
        return writer
    }

    /// Composes with `copy_file_range`: the kernel copies each source into the new file, no byte passes through user
    /// space, and a filesystem that shares extents (XFS, Btrfs) writes no data at all; on ext4 the kernel still
    /// copies the blocks. A source the kernel cannot copy from goes through a bounded buffer instead (`.streamed`).
    public func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod {
        let writer = try newWriter(id)
        defer { writer.close() }
        var kernelCopiedAll = true
        for source in sources {
            let reader = try openReader(source.id)
            try source.check(size: reader.size)
            guard let fd = reader.takeFileDescriptor() else {
                throw StorageError(.internalError, "blob \(source.id) gave no file descriptor")
            }
            defer { closeDescriptor(fd, location(of: source.id).1) }
            if try !writer.appendCopy(of: fd, sourcePath: location(of: source.id).1, length: source.length) {
                kernelCopiedAll = false
            }
        }
        try writer.sync()
        return kernelCopiedAll ? .kernelCopy : .streamed
    }

    public func openReader(_ id: BlobID) throws -> any BlobReader {
        let (_, path) = location(of: id)
        let fd: Int32
        do {
            fd = try syscall("open", path) { path.withCString { syscalls.open($0, O_RDONLY | O_CLOEXEC, 0) } }
        } catch let error as StorageError where error.code == .notFound {
            throw StorageError(.notFound, "blob \(id) does not exist", cause: error.cause)
        }
        do {
            return DiskBlobReader(syscalls: syscalls, path: path, fd: fd, size: try fileSize(fd, path))
        } catch {
            closeDescriptor(fd, path)
            throw error
        }
    }

    public func deleteBlob(_ id: BlobID) throws {
        let (_, path) = location(of: id)
        do {
            _ = try syscall("unlink", path) { path.withCString { syscalls.unlink($0) } }
        } catch let error as StorageError where error.code == .notFound {
            // Already gone: deleting is idempotent. (Not fsync'ed: a resurrected file is an orphan the sweep finds.)
        }
    }

    /// Every blob file under the root, for orphan sweeps. Files whose names are not BlobIDs are ignored.
    public func allBlobIDs() throws -> [BlobID] {
        var ids: [BlobID] = []
        for first in try listDirectory(root) where isFanOut(first) {
            for second in try listDirectory(root + "/" + first) where isFanOut(second) {
                for name in try listDirectory(root + "/" + first + "/" + second) {
                    if let id = BlobID(rawValue: name), name.hasPrefix(first + second) { ids.append(id) }
                }
            }
        }
        return ids.sorted { $0.rawValue < $1.rawValue }
    }

    /// `(directory, file path)` of a blob.
    func location(of id: BlobID) -> (String, String) {
        let raw = id.rawValue
        let directory = root + "/" + raw.prefix(2) + "/" + raw.dropFirst(2).prefix(2)
        return (directory, directory + "/" + raw)
    }

    private func fileSize(_ fd: Int32, _ path: String) throws -> Int64 {
        var info = stat()
        _ = try syscall("fstat", path) { syscalls.fstat(fd, &info) }
        return Int64(info.st_size)
    }

    /// `<root>/ab` and `<root>/ab/cd`, each made durable by an fsync of its parent.
    private func makeFanOut(_ id: BlobID) throws {
        let raw = id.rawValue
        let first = root + "/" + raw.prefix(2)
        try makeDirectory(first, parent: root)
        try makeDirectory(first + "/" + raw.dropFirst(2).prefix(2), parent: first)
    }

    /// An existing directory is the usual case (every write after the first into a fan-out directory), so it is
    /// told apart without an error being made and thrown.
    private func makeDirectory(_ directory: String, parent: String) throws {
        let made = try syscall("mkdir", directory, tolerating: EEXIST) {
            directory.withCString { syscalls.mkdir($0, 0o700) }
        }
        if made != nil { try syncDirectory(parent, syscalls) }
    }

    /// mkdir -p, fsyncing each parent in which a directory was created.
    private func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            let parent = prefix.isEmpty ? "/" : prefix
            prefix += "/" + component
            try makeDirectory(prefix, parent: parent)
        }
    }

    private func listDirectory(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else {
            let code = errno
            if code == ENOENT { return [] }
            throw SystemCallError(call: "opendir", path: path, errno: code).storageError()
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private func isFanOut(_ name: String) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
