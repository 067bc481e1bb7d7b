import Glibc
import SiloCore
import SiloHTTP
import SiloHashing
import SiloServer
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// ``BlobAppender`` must store and hash exactly the bytes it was given, however they were cut, in batches.
@Suite struct BlobAppenderTests {
    /// Records every write; fails the write after `failAfter` writes if set.
    final class RecordingWriter: BlobWriter {
        var writes: [[UInt8]] = []
        var failAfter: Int?
        /// Each write waits this long, as a direct write waits for the device: later batches queue up meanwhile.
        var delayMicroseconds: UInt32 = 0
        var offset: Int64 { Int64(writes.reduce(0) { $0 + $1.count }) }
        func write(_ bytes: UnsafeRawBufferPointer) throws {
            if delayMicroseconds > 0 { usleep(delayMicroseconds) }
            if let failAfter, writes.count >= failAfter { throw StorageError(.ioError, "injected") }
            writes.append(Array(bytes))
        }
        func sync() throws {}
        func close() {}
    }

    static let batch = 64

    /// Feeds `data` cut into pieces of the given sizes (cycled), then flushes.
    /// Hashing on the queue (`pipelined`) and in place must give the same answer.
    func run(_ data: [UInt8], pieces: [Int], pipelined: Bool = true) throws -> (RecordingWriter, BlobSummary) {
        let writer = RecordingWriter()
        let appender = BlobAppender(
            writer: writer, hasher: ObjectHasher(), batchBytes: Self.batch, longBatches: nil, pipelined: pipelined)
        var start = 0
        var i = 0
        while start < data.count {
            let end = min(data.count, start + pieces[i % pieces.count])
            try data[start..<end].withUnsafeBytes { try appender.append($0) }
            #expect(appender.appended == Int64(end))
            start = end
            i += 1
        }
        try appender.flush()
        return (writer, appender.takeHasher()!.finalize())
    }

    @Test(arguments: [0, 1, batch - 1, batch, batch + 1, 2 * batch + 1, 5 * batch + 17])
    func storesAndHashesEveryCut(size: Int) throws {
        let data = pattern(size, seed: UInt64(size))
        let cuts: [[Int]] = [
            [1], [Self.batch - 1], [Self.batch], [Self.batch + 1], [3 * Self.batch], [7, 1, 200, 64, 63, 65], [.max],
        ]
        for pieces in cuts {
            let (plain, inPlace) = try run(data, pieces: pieces, pipelined: false)
            #expect(Array(plain.writes.joined()) == data, "pieces \(pieces)")
            #expect(
                inPlace == BlobSummary(size: Int64(size), md5: MD5Hasher.digest(data), crc32c: CRC32C.checksum(data)))
            let (writer, summary) = try run(data, pieces: pieces)
            #expect(Array(writer.writes.joined()) == data, "pieces \(pieces)")
            #expect(summary.size == Int64(size))
            #expect(summary.md5 == MD5Hasher.digest(data))
            #expect(summary.crc32c == CRC32C.checksum(data))
            // Batches: every write but the last is at least a full buffer; no empty writes.
            #expect(writer.writes.dropLast().allSatisfy { $0.count >= Self.batch }, "pieces \(pieces)")
            #expect(writer.writes.allSatisfy { !$0.isEmpty })
        }
    }

    @Test func smallPiecesAreGatheredIntoFullBatches() throws {
        let data = pattern(10 * Self.batch + 5)
        let (writer, _) = try run(data, pieces: [3])
        #expect(writer.writes.map(\.count) == Array(repeating: Self.batch, count: 10) + [5])
    }

    @Test func aBigPieceOnAnEmptyBufferIsWrittenAsIsUpToABatchBoundary() throws {
        let data = pattern(3 * Self.batch + 1)
        let (writer, _) = try run(data, pieces: [.max])
        #expect(writer.writes.map(\.count) == [3 * Self.batch, 1])
    }

    /// A writer that starts mid-blob (a resumed chunk) gets a short first batch, then batches that end at multiples
    /// of the batch size in the blob: what lets the disk store write them without the page cache.
    @Test(arguments: [true, false])
    func batchesEndAtBatchMultiplesOfTheBlob(pipelined: Bool) throws {
        let writer = RecordingWriter()
        writer.writes = [pattern(Self.batch + 10)]  // already in the blob
        let appender = BlobAppender(
            writer: writer, hasher: ObjectHasher(), batchBytes: Self.batch, longBatches: nil, pipelined: pipelined)
        let data = pattern(4 * Self.batch, seed: 9)
        for piece in stride(from: 0, to: data.count, by: 7) {
            try data[piece..<min(data.count, piece + 7)].withUnsafeBytes { try appender.append($0) }
        }
        try appender.flush()
        #expect(writer.writes.dropFirst().map(\.count) == [Self.batch - 10, Self.batch, Self.batch, Self.batch, 10])
        #expect(Array(writer.writes.dropFirst().joined()) == data)
        #expect(appender.takeHasher()?.finalize().md5 == MD5Hasher.digest(data))
    }

    /// Once the pipeline runs, an upload that gets a slot moves to long batches (still ending at multiples of the
    /// long size in the blob); one that finds no slot free stays at the short size; the slot is given back at the end.
    @Test func longUploadsMoveToLongBatchesWhileSlotsLast() throws {
        let slots = LongBatchSlots(limit: 1)
        let data = pattern(12 * Self.batch + 3, seed: 4)
        func feed(_ appender: BlobAppender) throws {
            for piece in stride(from: 0, to: data.count, by: 5) {
                try data[piece..<min(data.count, piece + 5)].withUnsafeBytes { try appender.append($0) }
            }
            try appender.flush()
            #expect(appender.takeHasher()?.finalize().md5 == MD5Hasher.digest(data))
        }
        let first = RecordingWriter()
        let second = RecordingWriter()
        var long: BlobAppender? = BlobAppender(
            writer: first, hasher: ObjectHasher(), batchBytes: Self.batch, longBatches: (4 * Self.batch, slots))
        try feed(long!)
        do {
            let short = BlobAppender(
                writer: second, hasher: ObjectHasher(), batchBytes: Self.batch, longBatches: (4 * Self.batch, slots))
            try feed(short)
        }
        #expect(first.writes.map(\.count) == [Self.batch, 3 * Self.batch, 4 * Self.batch, 4 * Self.batch, 3])
        #expect(second.writes.map(\.count) == Array(repeating: Self.batch, count: 12) + [3])
        #expect(Array(first.writes.joined()) == data && Array(second.writes.joined()) == data)
        #expect(slots.inUse == 1)
        long = nil
        #expect(slots.inUse == 0)
    }

    /// Bytes read into ``BlobAppender/freeSpace`` (as the epoll transport reads bodies) are taken without a copy and
    /// stored and hashed as any others, with or without the pipeline and long batches; bytes placed behind a dropped
    /// prefix (a resumable chunk's resent bytes) are moved over it.
    @Test(arguments: [(true, 0), (false, 0), (true, 3), (false, 3)])
    func bytesPlacedInTheFreeSpaceAreTakenWhereTheyLie(pipelined: Bool, dropped: Int) throws {
        let data = pattern(13 * Self.batch + 7, seed: 5)
        let writer = RecordingWriter()
        let appender = BlobAppender(
            writer: writer, hasher: ObjectHasher(), batchBytes: Self.batch,
            longBatches: (4 * Self.batch, LongBatchSlots(limit: 1)), pipelined: pipelined)
        var start = 0
        var piece = 0
        while start < data.count {
            let space = appender.freeSpace
            #expect(!space.isEmpty)
            // Pieces of 1, 40 and up to the whole free space, in turn.
            let want = [1, 40, Int.max][piece % 3]
            let n = min(space.count - dropped, want, data.count - start)
            guard n > 0 else {
                // No room behind the dropped bytes: fill the space exactly once, with nothing dropped.
                let fill = min(space.count, data.count - start)
                data[start..<start + fill].withUnsafeBytes { space.copyMemory(from: $0) }
                try appender.append(UnsafeRawBufferPointer(rebasing: space[0..<fill]))
                start += fill
                continue
            }
            data[start..<start + n].withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: space[dropped...]).copyMemory(from: $0)
            }
            try appender.append(UnsafeRawBufferPointer(rebasing: space[dropped..<dropped + n]))
            start += n
            piece += 1
            #expect(appender.appended == Int64(start))
        }
        try appender.flush()
        #expect(Array(writer.writes.joined()) == data)
        #expect(writer.writes.dropLast().allSatisfy { $0.count >= Self.batch })
        #expect(
            appender.takeHasher()?.finalize()
                == BlobSummary(size: Int64(data.count), md5: MD5Hasher.digest(data), crc32c: CRC32C.checksum(data)))
    }

    /// With long batches two are in flight while a third buffer fills, so buffers are reused while the writer lags:
    /// every byte still lands once and in order, and the hashes see them in order.
    @Test func longBatchesInFlightKeepTheirOrderWhileTheWriterLags() throws {
        let writer = RecordingWriter()
        writer.delayMicroseconds = 300
        let long = 4 * Self.batch
        let appender = BlobAppender(
            writer: writer, hasher: ObjectHasher(), batchBytes: Self.batch,
            longBatches: (long, LongBatchSlots(limit: 1)))
        let data = pattern(Self.batch + 30 * long + 7, seed: 9)
        for piece in stride(from: 0, to: data.count, by: 37) {
            try data[piece..<min(data.count, piece + 37)].withUnsafeBytes { try appender.append($0) }
        }
        try appender.flush()
        #expect(Array(writer.writes.joined()) == data)
        // After the first short batch, a shorter long one up to the first multiple of the long size, then long ones.
        #expect(writer.writes.dropFirst(2).dropLast().allSatisfy { $0.count == long })
        #expect(
            appender.takeHasher()?.finalize()
                == BlobSummary(size: Int64(data.count), md5: MD5Hasher.digest(data), crc32c: CRC32C.checksum(data)))
    }

    /// A long batch's write that fails while another is in flight is reported once, by a later append or the flush,
    /// and nothing after it is written.
    @Test func aFailedWriteInFlightIsReportedOnce() throws {
        let writer = RecordingWriter()
        writer.failAfter = 4
        writer.delayMicroseconds = 200
        let appender = BlobAppender(
            writer: writer, hasher: ObjectHasher(), batchBytes: Self.batch,
            longBatches: (4 * Self.batch, LongBatchSlots(limit: 1)))
        let data = pattern(Self.batch + 12 * 4 * Self.batch, seed: 3)
        var failures = 0
        for piece in stride(from: 0, to: data.count, by: Self.batch) {
            do {
                try data[piece..<(piece + Self.batch)].withUnsafeBytes { try appender.append($0) }
            } catch {
                failures += 1
                break
            }
        }
        do { try appender.flush() } catch { failures += 1 }
        #expect(failures == 1)
        #expect(writer.writes.count == 4)
    }

    /// An upload whose bytes trickle in (a phone on a slow link) keeps one small buffer, however long it runs; one
    /// whose small batch fills quickly moves to full batches and the pipeline. The clock is the test's.
    @Test(arguments: [true, false])
    func aSlowUploadKeepsOneSmallBuffer(slow: Bool) throws {
        let writer = RecordingWriter()
        var now: UInt64 = 0
        let small = 4 * Self.batch
        let appender = BlobAppender(
            writer: writer, hasher: ObjectHasher(), batchBytes: 16 * Self.batch,
            longBatches: (64 * Self.batch, LongBatchSlots(limit: 1)), slowBatchBytes: small, clock: { now })
        let data = pattern(200 * Self.batch + 5, seed: 7)
        var largest = 0
        for piece in stride(from: 0, to: data.count, by: 40) {
            // One piece a second when slow; no time passes when fast.
            if slow { now += 1_000_000_000 }
            try data[piece..<min(data.count, piece + 40)].withUnsafeBytes { try appender.append($0) }
            largest = max(largest, appender.bufferBytes)
        }
        try appender.flush()
        #expect(Array(writer.writes.joined()) == data)
        #expect(
            appender.takeHasher()?.finalize()
                == BlobSummary(size: Int64(data.count), md5: MD5Hasher.digest(data), crc32c: CRC32C.checksum(data)))
        if slow {
            #expect(largest == small, "a slow upload held \(largest) bytes of buffers")
            #expect(writer.writes.dropLast().allSatisfy { $0.count == small })
        } else {
            #expect(largest > small)
            #expect(writer.writes.first?.count == small)
            #expect(writer.writes.dropFirst().dropLast().allSatisfy { $0.count > small })
        }
    }

    @Test func aFailedWriteIsNotRepeatedByFlush() throws {
        let writer = RecordingWriter()
        writer.failAfter = 1
        let appender = BlobAppender(writer: writer, hasher: ObjectHasher(), batchBytes: Self.batch, longBatches: nil)
        let data = pattern(3 * Self.batch)
        try data[0..<Self.batch].withUnsafeBytes { try appender.append($0) }  // written through
        try data[Self.batch..<(Self.batch + 10)].withUnsafeBytes { try appender.append($0) }  // buffered
        #expect(throws: StorageError.self) {
            try data[(Self.batch + 10)...].withUnsafeBytes { try appender.append($0) }
        }
        try appender.flush()  // nothing left to write: the failed batch is gone, not retried
        #expect(writer.writes.count == 1)
    }
}

/// Uploads of sizes around the batch size, through the real server and disk: stored bytes and reported hashes match.
@Suite struct BatchedUploadTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        var configuration = ServerConfiguration()
        configuration.strictV0Checksums = true
        server = try TestServer(configuration: configuration)
        client = server.client()
    }

    static let b = BlobAppender.defaultBatchBytes
    static let sizes = [0, 1, b - 1, b, b + 1, 3 * b + 5]

    func expectStored(_ name: String, _ response: TestResponse, _ data: [UInt8]) throws {
        #expect(response.status == 200, "\(name): \(response.text)")
        #expect(try response.string("md5Hash") == Base64.encode(MD5Hasher.digest(data)), "\(name)")
        #expect(try response.string("crc32c") == Checksums.crc32cBase64(CRC32C.checksum(data)), "\(name)")
        #expect(try response.string("size") == String(data.count), "\(name)")
        #expect(try client.get(objectPath(name) + "?alt=media").body == data, "\(name)")
    }

    @Test(arguments: sizes)
    func media(size: Int) throws {
        let data = pattern(size, seed: UInt64(size) + 1)
        try expectStored("m\(size)", try client.mediaUpload("m\(size)", data), data)
    }

    @Test(arguments: sizes)
    func multipart(size: Int) throws {
        let data = pattern(size, seed: UInt64(size) + 2)
        let md5 = Base64.encode(MD5Hasher.digest(data))
        let r = try client.multipartUpload("p\(size)", metadata: #"{"name":"p\#(size)","md5Hash":"\#(md5)"}"#, data)
        try expectStored("p\(size)", r, data)
    }

    @Test(arguments: sizes)
    func resumableInTwoChunks(size: Int) throws {
        let data = pattern(size, seed: UInt64(size) + 3)
        let started = try client.send(
            method: "POST", target: bucketPath() + "?name=r\(size)",
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"])
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let afterScheme = url.split(separator: "//", maxSplits: 1)[1]
        let target = String(afterScheme[afterScheme.firstIndex(of: "/")!...])
        let cut = size / 2
        let first = try client.send(
            method: "POST", target: target, headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"],
            body: Array(data[0..<cut]))
        #expect(first.status == 200)
        let last = try client.send(
            method: "POST", target: target,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": String(cut)],
            body: Array(data[cut...]))
        try expectStored("r\(size)", last, data)
    }

    @Test func aWrongClientMD5IsRejectedAndNothingBecomesVisible() throws {
        let data = pattern(3 * Self.b + 5)
        let wrong = Base64.encode(MD5Hasher.digest(Array(data.dropLast())))
        let r = try client.multipartUpload("bad", metadata: #"{"name":"bad","md5Hash":"\#(wrong)"}"#, data)
        #expect(r.status == 400)
        #expect(try client.get(objectPath("bad")).status == 404)
    }
}
