import SiloCore
@_spi(Testing) import SiloDisk
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Disk-specific behaviour: layout, durability calls, and failures injected through the syscall seam.
@Suite struct DiskBlobStoreTests {
    /// Records calls and lets a test fail chosen ones.
    final class Faults: Sendable {
        let calls = Mutex<[String]>([])
        /// Returns an errno to fail the nth (1-based) pwrite with, or nil to let it run.
        let pwriteFault = Mutex<(@Sendable (Int) -> Int32?)?>(nil)
        let pwriteCount = Mutex(0)
        /// Caps how many bytes each pwrite may write (short writes).
        let maxWrite = Mutex<Int?>(nil)
        let fdatasyncErrno = Mutex<Int32?>(nil)
        /// Ranges handed to startWriteback, and the errno to fail it with.
        let writebacks = Mutex<[Range<Int64>]>([])
        let writebackErrno = Mutex<Int32?>(nil)
        /// O_DIRECT switches asked for (and whether they took), the errno to refuse them with, and the errno to fail
        /// writes with while O_DIRECT is on (a device that wants a coarser alignment).
        let directSwitches = Mutex<[(on: Bool, took: Bool)]>([])
        let directErrno = Mutex<Int32?>(nil)
        let directWriteErrno = Mutex<Int32?>(nil)
        let directOn = Mutex(false)
        /// Bytes written while O_DIRECT was on.
        let directBytes = Mutex(0)

        func syscalls() -> Syscalls {
            var syscalls = Syscalls.system
            let system = Syscalls.system
            syscalls.pwrite = { fd, buffer, count, offset in
                let n = self.pwriteCount.withLock {
                    $0 += 1
                    return $0
                }
                self.calls.withLock { $0.append("pwrite") }
                if let fault = self.pwriteFault.withLock({ $0 }), let code = fault(n) {
                    errno = code
                    return -1
                }
                let direct = self.directOn.withLock { $0 }
                if direct, let code = self.directWriteErrno.withLock({ $0 }) {
                    errno = code
                    return -1
                }
                let written = system.pwrite(fd, buffer, min(count, self.maxWrite.withLock { $0 } ?? count), offset)
                if direct, written > 0 { self.directBytes.withLock { $0 += written } }
                return written
            }
            syscalls.setDirectIO = { fd, on in
                let result: Int32
                if let code = self.directErrno.withLock({ $0 }) {
                    errno = code
                    result = -1
                } else {
                    result = system.setDirectIO(fd, on)
                }
                if result == 0 { self.directOn.withLock { $0 = on } }
                self.directSwitches.withLock { $0.append((on, result == 0)) }
                return result
            }
            syscalls.fdatasync = { fd in
                self.calls.withLock { $0.append("fdatasync") }
                if let code = self.fdatasyncErrno.withLock({ $0 }) {
                    errno = code
                    return -1
                }
                return system.fdatasync(fd)
            }
            syscalls.fsync = { fd in
                self.calls.withLock { $0.append("fsync") }
                return system.fsync(fd)
            }
            syscalls.startWriteback = { fd, offset, count in
                self.writebacks.withLock { $0.append(offset..<(offset + count)) }
                if let code = self.writebackErrno.withLock({ $0 }) {
                    errno = code
                    return -1
                }
                return system.startWriteback(fd, offset, count)
            }
            syscalls.mkdir = { path, mode in
                self.calls.withLock { $0.append("mkdir") }
                return system.mkdir(path, mode)
            }
            return syscalls
        }
    }

    /// Composition by copy_file_range, and where the kernel cannot copy between two files (EXDEV: another
    /// filesystem) the rest through a buffer: the same bytes either way, durable, and the method says which.
    @Test(arguments: [Int32(0), EXDEV, ENOSYS])
    func composeUsesTheKernelCopyAndFallsBackToABuffer(failingWith code: Int32) throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        let copies = Mutex(0)
        var syscalls = faults.syscalls()
        let system = Syscalls.system
        syscalls.copyFileRange = { source, sourceOffset, target, targetOffset, count in
            copies.withLock { $0 += 1 }
            if code != 0 {
                errno = code
                return -1
            }
            // Short copies, as the kernel may make: the store must loop.
            return system.copyFileRange(source, sourceOffset, target, targetOffset, min(count, 100_000))
        }
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: syscalls)
        var slices: [BlobSlice] = []
        var expected: [UInt8] = []
        for (index, size) in [250_000, 0, 17].enumerated() {
            let id = BlobID.random()
            let bytes = pattern(size, seed: UInt8(index))
            let writer = try store.makeWriter(id, at: 0)
            try writer.write(bytes)
            try writer.sync()
            writer.close()
            slices.append(BlobSlice(id, length: Int64(size)))
            expected += bytes
        }
        faults.calls.withLock { $0 = [] }
        let target = BlobID.random()
        let method = try store.composeBlob(target, from: slices)
        #expect(method == (code == 0 ? .kernelCopy : .streamed))
        #expect(try store.openReader(target).readAll() == expected)
        #expect(
            copies.withLock { $0 } == (code == 0 ? 4 : 2), "3 short copies, or one refused try per non-empty source")
        #expect(faults.calls.withLock { $0 }.contains("fdatasync"), "the composed blob is made durable")
        #expect(faults.calls.withLock { $0 }.contains("pwrite") == (code != 0))
    }

    @Test func filesAreNamedByBlobIDUnderTwoLevelsOfFanOut() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try DiskBlobStore(root: directory.path + "/blobs/")
        let id = try #require(BlobID(rawValue: "abcdef0123456789abcdef0123456789"))
        let writer = try store.makeWriter(id, at: 0)
        try writer.write([1])
        writer.close()
        var info = stat()
        #expect(stat(directory.path + "/blobs/ab/cd/abcdef0123456789abcdef0123456789", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // Stray files are not blobs.
        #expect(creat(directory.path + "/blobs/ab/cd/not-a-blob", 0o600) >= 0)
        #expect(try store.allBlobIDs() == [id])
    }

    @Test func newBlobsSyncTheirDataAndDirectoryEntry() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: faults.syscalls())
        faults.calls.withLock { $0 = [] }
        let id = BlobID.random()
        let writer = try store.makeWriter(id, at: 0)
        #expect(faults.calls.withLock { $0 } == ["mkdir", "fsync", "mkdir", "fsync"], "fan-out dirs made durable")
        try writer.write([1, 2, 3])
        try writer.sync()
        try writer.write([4])
        try writer.sync()
        #expect(faults.calls.withLock { $0 }.suffix(5) == ["pwrite", "fdatasync", "fsync", "pwrite", "fdatasync"])
        writer.close()

        // A resumed blob's entry is already durable: data only.
        faults.calls.withLock { $0 = [] }
        let resumed = try store.makeWriter(id, at: 4)
        try resumed.write([5])
        try resumed.sync()
        #expect(faults.calls.withLock { $0 } == ["pwrite", "fdatasync"])
    }

    @Test func writebackStartsBehindTheWritesAndIsOnlyAHint() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: faults.syscalls())
        let id = BlobID.random()
        let writer = try store.makeWriter(id, at: 0)
        let piece = pattern(300_000)
        for _ in 0..<30 { try writer.write(piece) }  // 9 MB: two writeback windows of ≥ 4 MiB
        let windows = faults.writebacks.withLock { $0 }
        #expect(windows.count == 2)
        #expect(windows.first?.lowerBound == 0)
        #expect(zip(windows, windows.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound }, "contiguous")
        #expect(windows.allSatisfy { $0.count >= 4 << 20 })
        // A failing hint changes nothing: writes go on and sync decides durability.
        faults.writebackErrno.withLock { $0 = EIO }
        for _ in 0..<15 { try writer.write(piece) }
        #expect(faults.writebacks.withLock { $0 }.count == 3)
        try writer.sync()
        writer.close()
        #expect(try store.openReader(id).readAll() == Array(repeating: piece, count: 45).flatMap { $0 })

        // A resumed writer starts its windows at its offset.
        faults.writebacks.withLock { $0 = [] }
        let resumed = try store.makeWriter(id, at: 45 * 300_000)
        for _ in 0..<15 { try resumed.write(piece) }
        let start: Int64 = 45 * 300_000
        #expect(faults.writebacks.withLock { $0 }.map(\.lowerBound) == [start])
    }

    /// A page-aligned buffer of `count` pattern bytes, as the upload batcher hands the writer.
    func withAlignedPattern(_ count: Int, seed: UInt8 = 0, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 4096)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: pattern(count, seed: seed))
        try body(UnsafeRawBufferPointer(buffer))
    }

    /// Aligned batches go to the device without the page cache (where the filesystem allows it, as ext4 and XFS do),
    /// other writes through it; either way the bytes read back the same, and only page-cache bytes get writeback
    /// hints.
    @Test func alignedWritesBypassThePageCacheAndTheRestDoNot() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: faults.syscalls())
        let id = BlobID.random()
        let writer = try store.makeWriter(id, at: 0)
        for seed in 0..<6 { try withAlignedPattern(1 << 20, seed: UInt8(seed)) { try writer.write($0) } }
        let odd = pattern(1000, seed: 9)
        try writer.write(odd)  // a tail: not a multiple of 4 KiB
        try writer.sync()
        writer.close()
        let switches = faults.directSwitches.withLock { $0 }
        #expect(switches.first?.on == true, "the first aligned write asks for O_DIRECT")
        var expected = (0..<6).flatMap { pattern(1 << 20, seed: UInt8($0)) }
        expected += odd
        #expect(try store.openReader(id).readAll() == expected)
        if switches.first?.took == true {
            #expect(faults.directBytes.withLock { $0 } == 6 << 20)
            #expect(switches.map(\.on) == [true, false], "one switch each way")
            #expect(faults.writebacks.withLock { $0 } == [], "direct bytes need no writeback hint")
        } else {
            #expect(switches.count == 1, "a filesystem without direct I/O is asked once")
        }
    }

    /// A filesystem without O_DIRECT (tmpfs on older kernels) and a device that refuses 4 KiB alignment (EINVAL on
    /// the write) both leave the writer on the page cache, with every byte written once.
    @Test(arguments: [true, false])
    func withoutDirectIOTheWriterUsesThePageCache(refusedAtWrite: Bool) throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        if refusedAtWrite {
            faults.directWriteErrno.withLock { $0 = EINVAL }
        } else {
            faults.directErrno.withLock { $0 = EINVAL }
        }
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: faults.syscalls())
        let id = BlobID.random()
        let writer = try store.makeWriter(id, at: 0)
        for seed in 0..<3 { try withAlignedPattern(256 << 10, seed: UInt8(seed)) { try writer.write($0) } }
        try writer.sync()
        writer.close()
        #expect(try store.openReader(id).readAll() == (0..<3).flatMap { pattern(256 << 10, seed: UInt8($0)) })
        #expect(faults.directBytes.withLock { $0 } == 0)
        let switches = faults.directSwitches.withLock { $0 }
        if refusedAtWrite {
            // Where the filesystem has O_DIRECT: on for the first write, off after its EINVAL, never on again.
            #expect(switches.map(\.on) == [true, false] || switches.map(\.took) == [false])
        } else {
            #expect(switches.map(\.on) == [true])
        }
    }

    @Test func shortWritesAndEINTRAreRetried() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        faults.maxWrite.withLock { $0 = 3 }
        faults.pwriteFault.withLock { $0 = { $0 % 2 == 0 ? EINTR : nil } }
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: faults.syscalls())
        let id = BlobID.random()
        let writer = try store.makeWriter(id, at: 0)
        try writer.write(pattern(1000))
        try writer.sync()
        #expect(writer.offset == 1000)
        #expect(try store.openReader(id).readAll() == pattern(1000))
    }

    @Test func noSpaceMidWriteThrowsACleanErrorAndCommitsNothing() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: faults.syscalls())
        let metadata = InMemoryMetadataStore()
        let clock = Timestamp(microseconds: 1_000)

        // The upload flow: register, write, sync, then one metadata transaction. The disk fills up mid-write.
        let id = BlobID.random()
        try metadata.registerPendingBlob(id, at: clock)
        let writer = try store.makeWriter(id, at: 0)
        try writer.write(pattern(4096))
        faults.maxWrite.withLock { $0 = 1000 }
        faults.pwriteFault.withLock { $0 = { $0 >= 3 ? ENOSPC : nil } }  // a short write, then ENOSPC
        let error = try #require(#expect(throws: StorageError.self) { try writer.write(pattern(4096, seed: 1)) })
        #expect(error.code == .insufficientStorage)
        let cause = try #require(error.cause as? SystemCallError)
        #expect(cause.call == "pwrite" && cause.errno == ENOSPC && cause.path.hasSuffix(id.rawValue))
        #expect(error.message.contains(id.rawValue))
        #expect(writer.offset == 4096 + 1000, "offset counts only bytes the kernel took")
        // The writer is poisoned: it cannot go on to sync and look complete.
        #expect(throws: StorageError.self) { try writer.sync() }
        #expect(throws: StorageError.self) { try writer.write([1]) }
        writer.close()

        // No object was made, so the blob is garbage once the grace period passes, and the sweep removes it.
        #expect(try metadata.listObjects(bucketName(), prefix: "", startAfter: nil, limit: 10) == [])
        #expect(try metadata.garbageBlobs(registeredBefore: Timestamp(microseconds: 2_000), limit: 10) == [id])
        try store.deleteBlob(id)
        try metadata.forgetBlob(id)
        #expect(try store.allBlobIDs() == [])
    }

    @Test func failedSyncIsReportedAndPoisonsTheWriter() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let faults = Faults()
        let store = try DiskBlobStore(root: directory.path + "/blobs", syscalls: faults.syscalls())
        let writer = try store.makeWriter(.random(), at: 0)
        try writer.write([1, 2, 3])
        faults.fdatasyncErrno.withLock { $0 = EIO }
        let error = #expect(throws: StorageError.self) { try writer.sync() }
        #expect(error?.code == .ioError)
        #expect((error?.cause as? SystemCallError)?.call == "fdatasync")
        faults.fdatasyncErrno.withLock { $0 = nil }
        #expect(throws: StorageError.self) { try writer.sync() }
    }

    @Test func unwritableRootIsAServerFaultNotTheCallersPermission() throws {
        guard geteuid() != 0 else { return }  // root ignores permissions
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        #expect(chmod(directory.path, 0o500) == 0)
        defer { _ = chmod(directory.path, 0o700) }
        let error = #expect(throws: StorageError.self) { _ = try DiskBlobStore(root: directory.path + "/blobs") }
        #expect(error?.code == .ioError)
    }
}
