import SiloCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One suite, run against every BlobStore.
@Suite struct BlobStoreConformanceTests {
    @Test(arguments: BlobBackend.allCases)
    func writeInPiecesSyncAndReadBackAtOffsets(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let id = BlobID.random()
        let bytes = pattern(200_000)
        let writer = try fixture.store.makeWriter(id, at: 0)
        var index = 0
        for size in [1, 0, 10, 4096, 65_536, 100_000] {
            try writer.write(Array(bytes[index..<min(bytes.count, index + size)]))
            index += size
        }
        try writer.write(Array(bytes[index...]))
        #expect(writer.offset == Int64(bytes.count))
        try writer.sync()
        writer.close()
        writer.close()  // idempotent

        let reader = try fixture.store.openReader(id)
        #expect(reader.size == Int64(bytes.count))
        #expect(try reader.readAll(chunk: 7_777) == bytes)
        #expect(try reader.read(10, at: 12_345) == Array(bytes[12_345..<12_355]))
        #expect(try reader.read(100, at: Int64(bytes.count) - 5) == Array(bytes.suffix(5)))
        #expect(try reader.read(10, at: Int64(bytes.count)) == [])
        #expect(try reader.read(10, at: Int64(bytes.count) + 100) == [])
        #expect(try fixture.allBlobIDs() == [id])
    }

    /// Composition (compose, XML multipart uploads): the new blob is the sources in order, empty ones included,
    /// made inside the store where it can (the disk by the kernel, S3 by server-side copies), replacing what was
    /// there; a source of another size than its slice says is refused.
    @Test(arguments: BlobBackend.allCases)
    func composeConcatenatesTheSourcesInsideTheStore(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        func blob(_ bytes: [UInt8]) throws -> BlobSlice {
            let id = BlobID.random()
            let writer = try store.makeWriter(id, at: 0)
            try writer.write(bytes)
            try writer.sync()
            writer.close()
            return BlobSlice(id, length: Int64(bytes.count))
        }
        let a = pattern(70_000, seed: 1)
        let c = pattern(3, seed: 3)
        // A resumed blob: 40 bytes written, cut back to 25 and continued (on S3 a segment cut short by a later one).
        let resumedID = BlobID.random()
        let first = try store.makeWriter(resumedID, at: 0)
        try first.write(pattern(40, seed: 4))
        try first.sync()
        first.close()
        let second = try store.makeWriter(resumedID, at: 25)
        try second.write(pattern(30, seed: 5))
        try second.sync()
        second.close()
        let resumed = Array(pattern(40, seed: 4)[..<25]) + pattern(30, seed: 5)
        let sources = [try blob(a), try blob([]), try blob(c), BlobSlice(resumedID, length: 55)]

        let target = try blob(pattern(5, seed: 9))  // replaced
        let method = try store.composeBlob(target.id, from: sources)
        let expected: BlobCompositionMethod =
            switch backend {
            case .memory: .inMemory
            case .disk: .kernelCopy
            case .s3: .storeSide
            }
        #expect(method == expected)
        #expect(try store.openReader(target.id).readAll(chunk: 9_999) == a + c + resumed)
        try fixture.reopen()
        #expect(try fixture.store.openReader(target.id).size == Int64(a.count + c.count + resumed.count))

        let empty = BlobID.random()
        _ = try fixture.store.composeBlob(empty, from: [sources[1]])
        #expect(try fixture.store.openReader(empty).size == 0)

        var wrongSize = sources[2]
        wrongSize.length = 4
        let corrupt = #expect(throws: StorageError.self) {
            _ = try fixture.store.composeBlob(BlobID.random(), from: [sources[0], wrongSize])
        }
        #expect(corrupt?.code == .corrupt)
        let missing = #expect(throws: StorageError.self) {
            _ = try fixture.store.composeBlob(BlobID.random(), from: [BlobSlice(.random(), length: 1)])
        }
        #expect(missing?.code == .notFound)
    }

    @Test(arguments: BlobBackend.allCases)
    func anEmptyBlobExists(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let id = BlobID.random()
        let writer = try fixture.store.makeWriter(id, at: 0)
        try writer.sync()
        writer.close()
        #expect(try fixture.store.openReader(id).size == 0)
    }

    @Test(arguments: BlobBackend.allCases)
    func continuingAtAnOffsetAfterReopenTruncatesTheExcess(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let id = BlobID.random()
        let first = try fixture.store.makeWriter(id, at: 0)
        try first.write(pattern(100))
        try first.sync()
        first.close()

        try fixture.reopen()
        // As if bytes 60..<100 were written but never acknowledged before a crash.
        let resumed = try fixture.store.makeWriter(id, at: 60)
        #expect(resumed.offset == 60)
        try resumed.write(pattern(10, seed: 200))
        #expect(resumed.offset == 70)
        try resumed.sync()
        resumed.close()
        #expect(try fixture.store.openReader(id).readAll() == Array(pattern(100)[..<60]) + pattern(10, seed: 200))

        // Continuing exactly at the end appends.
        let appender = try fixture.store.makeWriter(id, at: 70)
        try appender.write([1, 2, 3])
        try appender.sync()
        appender.close()
        #expect(try fixture.store.openReader(id).size == 73)

        // Offset 0 starts the blob over.
        let restart = try fixture.store.makeWriter(id, at: 0)
        try restart.write([9])
        try restart.sync()
        restart.close()
        #expect(try fixture.store.openReader(id).readAll() == [9])
    }

    @Test(arguments: BlobBackend.allCases)
    func continuingPastTheEndOrOnAMissingBlobIsRefused(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let id = BlobID.random()
        let writer = try fixture.store.makeWriter(id, at: 0)
        try writer.write(pattern(10))
        try writer.sync()
        writer.close()
        let pastEnd = #expect(throws: StorageError.self) { _ = try fixture.store.makeWriter(id, at: 11) }
        #expect(pastEnd?.code == .corrupt)
        #expect(try fixture.store.openReader(id).size == 10, "a refused resume changes nothing")
        let missing = #expect(throws: StorageError.self) { _ = try fixture.store.makeWriter(.random(), at: 5) }
        #expect(missing?.code == .corrupt)
        #expect(try fixture.allBlobIDs() == [id], "a refused resume creates nothing")
        let negative = #expect(throws: StorageError.self) { _ = try fixture.store.makeWriter(id, at: -1) }
        #expect(negative?.code == .invalidArgument)
    }

    @Test(arguments: BlobBackend.allCases)
    func missingBlobIsNotFoundAndDeleteIsIdempotent(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let id = BlobID.random()
        let error = #expect(throws: StorageError.self) { _ = try fixture.store.openReader(id) }
        #expect(error?.code == .notFound)
        try fixture.store.deleteBlob(id)

        let writer = try fixture.store.makeWriter(id, at: 0)
        try writer.write([1, 2, 3])
        try writer.sync()
        writer.close()
        try fixture.store.deleteBlob(id)
        try fixture.store.deleteBlob(id)
        let gone = #expect(throws: StorageError.self) { _ = try fixture.store.openReader(id) }
        #expect(gone?.code == .notFound)
        #expect(try fixture.allBlobIDs() == [])
    }

    @Test(arguments: BlobBackend.allCases)
    func takeFileDescriptorHandsOverTheFile(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let id = BlobID.random()
        let writer = try fixture.store.makeWriter(id, at: 0)
        try writer.write(pattern(1000))
        writer.close()
        var reader: (any BlobReader)? = try fixture.store.openReader(id)
        guard let fd = reader!.takeFileDescriptor() else {
            #expect(backend != .disk, "only non-file stores may decline")
            return
        }
        #expect(reader!.takeFileDescriptor() == nil, "handed over once")
        reader = nil  // the reader must not close what it handed over
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(pread(fd, &buffer, 1000, 0) == 1000)
        #expect(buffer == pattern(1000))
        #expect(close(fd) == 0)
    }

    @Test(arguments: BlobBackend.allCases)
    func blobsAreIndependent(_ backend: BlobBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let ids = (0..<20).map { _ in BlobID.random() }
        for (index, id) in ids.enumerated() {
            let writer = try fixture.store.makeWriter(id, at: 0)
            try writer.write(pattern(index * 10, seed: UInt8(index)))
            try writer.sync()
        }
        for (index, id) in ids.enumerated() {
            #expect(try fixture.store.openReader(id).readAll() == pattern(index * 10, seed: UInt8(index)))
        }
        #expect(try fixture.allBlobIDs() == ids.sorted { $0.rawValue < $1.rawValue })
    }
}
