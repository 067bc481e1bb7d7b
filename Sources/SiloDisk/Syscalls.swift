#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif
#if canImport(CFileSync)
internal import CFileSync
#endif

/// The syscalls the disk blob store makes, as replaceable closures: tests inject ENOSPC, EIO and short writes here.
///
/// Each closure has the libc contract: it returns -1 and sets errno on failure.
@_spi(Testing) public struct Syscalls: Sendable {
    public var open: @Sendable (_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32
    public var pwrite: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: off_t) -> Int
    public var pread: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: off_t) -> Int
    public var ftruncate: @Sendable (_ fd: Int32, _ length: off_t) -> Int32
    public var fstat: @Sendable (_ fd: Int32, _ result: UnsafeMutablePointer<stat>) -> Int32
    public var fdatasync: @Sendable (_ fd: Int32) -> Int32
    public var fsync: @Sendable (_ fd: Int32) -> Int32
    /// Starts writeback of a file range without waiting for it (`sync_file_range(SYNC_FILE_RANGE_WRITE)`); a hint
    /// that moves device work earlier, never a durability step. A no-op where the call does not exist.
    public var startWriteback: @Sendable (_ fd: Int32, _ offset: Int64, _ count: Int64) -> Int32
    /// `copy_file_range(2)`: the kernel copies `count` bytes between two files at the given offsets (advancing
    /// them), without the data entering user space. Where it does not exist, fails with ENOSYS.
    public var copyFileRange:
        @Sendable (
            _ source: Int32, _ sourceOffset: UnsafeMutablePointer<Int64>, _ target: Int32,
            _ targetOffset: UnsafeMutablePointer<Int64>, _ count: Int
        ) -> Int
    /// Turns `O_DIRECT` on or off for an open descriptor (`fcntl` `F_SETFL`): writes then go from the caller's
    /// buffer to the device without the page cache. Fails with EINVAL where the filesystem has no direct I/O.
    public var setDirectIO: @Sendable (_ fd: Int32, _ on: Bool) -> Int32
    public var mkdir: @Sendable (_ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32
    public var unlink: @Sendable (_ path: UnsafePointer<CChar>) -> Int32

    public static let system = Syscalls(
        open: { path, flags, mode in Glibc.open(path, flags, mode) },
        pwrite: { fd, buffer, count, offset in Glibc.pwrite(fd, buffer, count, offset) },
        pread: { fd, buffer, count, offset in Glibc.pread(fd, buffer, count, offset) },
        ftruncate: { fd, length in Glibc.ftruncate(fd, length) },
        fstat: { fd, result in Glibc.fstat(fd, result) },
        fdatasync: { fd in Glibc.fdatasync(fd) },
        fsync: { fd in Glibc.fsync(fd) },
        startWriteback: { fd, offset, count in
            #if canImport(CFileSync)
            sync_file_range(fd, offset, count, silo_sync_file_range_write())
            #else
            0
            #endif
        },
        copyFileRange: { source, sourceOffset, target, targetOffset, count in
            #if canImport(CFileSync)
            copy_file_range(source, sourceOffset, target, targetOffset, UInt(count), 0)
            #else
            errno = ENOSYS
            return -1
            #endif
        },
        setDirectIO: { fd, on in
            #if canImport(CFileSync)
            let direct = silo_o_direct()
            #else
            let direct: Int32 = 0
            #endif
            guard direct != 0 else {
                errno = EINVAL
                return -1
            }
            let flags = fcntl(fd, F_GETFL)
            guard flags != -1 else { return -1 }
            return fcntl(fd, F_SETFL, on ? flags | direct : flags & ~direct)
        },
        mkdir: { path, mode in Glibc.mkdir(path, mode) },
        unlink: { path in Glibc.unlink(path) }
    )
}
