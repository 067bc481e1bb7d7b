import Foundation
import SiloCore
import SiloS3Signer
import Testing

@testable import SiloS3

/// SiloS3 against a real S3 store (SeaweedFS in `make s3-test`): multipart, resumable segments across store
/// instances, ranged reads, deletes, bounded memory, and the error mapping of real replies.
@Suite(.enabled(if: liveS3URL != nil, "SILO_TEST_S3_URL is not set (make s3-test starts SeaweedFS and sets it)"))
struct S3LiveTests {
    @Test func smallWritesAreOnePutAndLargeOnesAMultipartUpload() throws {
        let live = try LiveS3(partSize: 5 << 20)
        let small = BlobID.random()
        let smallWriter = try live.store.makeWriter(small, at: 0)
        try smallWriter.write(pattern((5 << 20) - 1))
        try smallWriter.sync()
        #expect((smallWriter as? S3BlobWriter)?.partsSent == 0)
        smallWriter.close()

        let large = BlobID.random()
        let bytes = pattern((12 << 20) + 12_345, seed: 7)
        let writer = try live.store.makeWriter(large, at: 0)
        for start in stride(from: 0, to: bytes.count, by: 1 << 20) {
            try writer.write(Array(bytes[start..<min(bytes.count, start + (1 << 20))]))
        }
        #expect((writer as? S3BlobWriter)?.partsSent == 2, "two full 5 MiB parts went out before sync")
        try writer.sync()
        let s3Writer = try #require(writer as? S3BlobWriter)
        #expect(s3Writer.partsSent == 3, "sync sent the short last part")
        #expect(s3Writer.peakBufferedBytes <= 5 << 20)
        writer.close()

        #expect(try live.segments(large).map(\.1) == [Int64(bytes.count)], "one object, completed from 3 parts")
        let reader = try live.store.openReader(large)
        #expect(reader.size == Int64(bytes.count))
        #expect(try reader.readAll(chunk: 1 << 20) == bytes)
        #expect(try live.store.openReader(small).size == (5 << 20) - 1)
    }

    /// Composition stays in the bucket: each source segment becomes one segment of the new blob at its offset (a
    /// CopyObject), and a segment larger than the largest single copy goes as ranges of a multipart upload
    /// (UploadPartCopy) — 12 MiB in 5 MiB ranges here.
    @Test func composeCopiesSegmentsInsideTheBucket() throws {
        let live = try LiveS3(partSize: 5 << 20, maxCopyBytes: 5 << 20)
        var slices: [BlobSlice] = []
        var expected: [UInt8] = []
        for (index, size) in [(12 << 20) + 7, 1_000, 5 << 20].enumerated() {
            let id = BlobID.random()
            let bytes = pattern(size, seed: UInt8(index))
            let writer = try live.store.makeWriter(id, at: 0)
            try writer.write(bytes)
            try writer.sync()
            writer.close()
            slices.append(BlobSlice(id, length: Int64(size)))
            expected += bytes
        }
        let target = BlobID.random()
        #expect(try live.store.composeBlob(target, from: slices) == .storeSide)
        let starts: [Int64] = [0, (12 << 20) + 7, (12 << 20) + 1_007]
        #expect(try live.segments(target).map(\.0) == starts)
        #expect(try live.segments(target).map(\.1) == slices.map(\.length))
        #expect(try live.anotherNode().openReader(target).readAll(chunk: 4 << 20) == expected)
    }

    @Test func aResumableUploadContinuesOnAnotherNodeAfterACrash() throws {
        let live = try LiveS3(partSize: 5 << 20)
        let id = BlobID.random()
        let bytes = pattern(14 << 20, seed: 3)

        // Node A: the session starts (an empty blob), two chunks are acknowledged (synced), a third is in flight,
        // partly in a multipart upload, when A dies.
        try live.store.makeWriter(id, at: 0).close()
        let nodeA = try live.store.makeWriter(id, at: 0)
        try nodeA.write(Array(bytes[0..<(1 << 20)]))
        try nodeA.sync()
        try nodeA.write(Array(bytes[(1 << 20)..<(6 << 20)]))
        try nodeA.sync()
        try nodeA.write(pattern(7 << 20, seed: 99))  // never acknowledged
        let crashed = try #require(nodeA as? S3BlobWriter)
        #expect(crashed.partsSent == 2, "a part of the unacknowledged chunk reached S3")
        crashed.abandonForTesting()
        #expect(try live.segments(id).map(\.0) == [0, 1 << 20])

        // Node B: a fresh store instance continues at the acknowledged offset.
        let nodeB = live.anotherNode()
        let resumed = try nodeB.makeWriter(id, at: 6 << 20)
        #expect(resumed.offset == 6 << 20)
        try resumed.write(Array(bytes[(6 << 20)...]))
        try resumed.sync()
        resumed.close()

        // Node C reads the whole blob: three segments, concatenated.
        let nodeC = live.anotherNode()
        #expect(try live.segments(id).map(\.0) == [0, 1 << 20, 6 << 20])
        #expect(try nodeC.openReader(id).readAll(chunk: 3 << 20) == bytes)
    }

    @Test func resumingInsideASegmentCutsItWithoutRewritingIt() throws {
        let live = try LiveS3()
        let id = BlobID.random()
        let writer = try live.store.makeWriter(id, at: 0)
        try writer.write(pattern(3000))
        try writer.sync()
        try writer.write(pattern(3000, from: 3000))
        try writer.sync()
        writer.close()
        #expect(try live.segments(id).map(\.0) == [0, 3000])

        // Resume at 1000 on another node: the segment at 3000 goes, an empty one at 1000 cuts the first.
        let other = live.anotherNode()
        let resumed = try other.makeWriter(id, at: 1000)
        #expect(try live.segments(id).map { [$0.0, $0.1] } == [[0, 3000], [1000, 0]])
        #expect(try other.openReader(id).size == 1000, "the cut is visible before anything is written")
        try resumed.write(pattern(500, seed: 1))
        try resumed.sync()
        resumed.close()
        #expect(try live.segments(id).map { [$0.0, $0.1] } == [[0, 3000], [1000, 500]])
        #expect(try other.openReader(id).readAll() == pattern(1000) + pattern(500, seed: 1))

        // Resuming exactly at the end writes nothing until there is something to write.
        let appender = try other.makeWriter(id, at: 1500)
        #expect(try live.segments(id).count == 2)
        appender.close()
        #expect(try live.segments(id).count == 2)

        // Offset 0 starts over: one empty segment.
        try other.makeWriter(id, at: 0).close()
        #expect(try live.segments(id).map { [$0.0, $0.1] } == [[0, 0]])
        #expect(try other.openReader(id).size == 0)
    }

    /// A failed request closes its writer only once its answer is on its way, perhaps after the client's retry wrote
    /// the same segment through a newer writer: closing must not publish the unsynced bytes over the retry's.
    @Test func closingWithoutSyncPublishesNothing() throws {
        let live = try LiveS3()
        let id = BlobID.random()
        let failed = try live.store.makeWriter(id, at: 0)
        #expect(try live.segments(id).map { [$0.0, $0.1] } == [[0, 0]], "a new blob exists once makeWriter returns")
        try failed.write(pattern(1000, seed: 2))  // never acknowledged

        let retry = try live.anotherNode().makeWriter(id, at: 0)
        try retry.write(pattern(3000))
        try retry.sync()
        retry.close()
        failed.close()
        #expect(try live.segments(id).map { [$0.0, $0.1] } == [[0, 3000]])
        #expect(try live.store.openReader(id).readAll() == pattern(3000))
    }

    @Test func rangedReadsAcrossSegmentsWithReadAhead() throws {
        let live = try LiveS3()
        let id = BlobID.random()
        let bytes = pattern(9 << 20, seed: 11)
        let writer = try live.store.makeWriter(id, at: 0)
        // Segments of uneven sizes: cuts at 1 B, 64 KiB + 3, 3 MiB and the end.
        for cut in [1, (64 << 10) + 3, 3 << 20, bytes.count] {
            try writer.write(Array(bytes[Int(writer.offset)..<cut]))
            try writer.sync()
        }
        writer.close()
        #expect(try live.segments(id).count == 4)

        let reader = try live.store.openReader(id)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<40 {
            let offset = Int.random(in: 0..<bytes.count, using: &generator)
            let count = Int.random(in: 1...(300 << 10), using: &generator)
            let expected = Array(bytes[offset..<min(bytes.count, offset + count)])
            #expect(try reader.read(count, at: Int64(offset)) == expected, "read \(count) at \(offset)")
        }
        // A read spanning three segments in one call comes back whole.
        #expect(try reader.read(4 << 20, at: 0) == Array(bytes[0..<(4 << 20)]))
        #expect(try reader.read(10, at: Int64(bytes.count)) == [])

        // Sequential 64 KiB reads of 9 MiB: the window grows to 4 MiB, so a handful of GETs, not 144.
        let sequential = try #require(try live.store.openReader(id) as? S3BlobReader)
        #expect(try sequential.readAll(chunk: 64 << 10) == bytes)
        #expect(sequential.requests <= 10, "\(sequential.requests) GETs for 144 reads")
    }

    @Test func deleteIsIdempotentAndRemovesEverySegment() throws {
        let live = try LiveS3()
        let id = BlobID.random()
        try live.store.deleteBlob(id)  // never existed
        let writer = try live.store.makeWriter(id, at: 0)
        for index in 0..<5 {
            try writer.write(pattern(100, seed: UInt8(index)))
            try writer.sync()
        }
        writer.close()
        #expect(try live.segments(id).count == 5)
        let keep = BlobID.random()
        try live.store.makeWriter(keep, at: 0).close()

        try live.store.deleteBlob(id)  // a batch delete (with Content-MD5)
        #expect(try live.segments(id).isEmpty)
        try live.store.deleteBlob(id)
        try live.anotherNode().deleteBlob(id)
        let error = #expect(throws: StorageError.self) { _ = try live.store.openReader(id) }
        #expect(error?.code == .notFound)
        #expect(try live.store.allBlobIDs() == [keep])
    }

    @Test func writing100MiBHoldsOnePartInMemory() throws {
        let live = try LiveS3(partSize: 8 << 20)
        let id = BlobID.random()
        let chunk = pattern(64 << 10, seed: 5)
        let total = 100 << 20
        let before = residentBytes()
        var peak = before
        let writer = try live.store.makeWriter(id, at: 0)
        for index in 0..<(total / chunk.count) {
            try writer.write(chunk)
            if index % 32 == 0 { peak = max(peak, residentBytes()) }
        }
        try writer.sync()
        peak = max(peak, residentBytes())
        let s3Writer = try #require(writer as? S3BlobWriter)
        #expect(s3Writer.peakBufferedBytes <= 8 << 20)
        #expect(s3Writer.partsSent == 13)
        writer.close()
        // Generous against other tests running in parallel; buffering the whole blob would add 100 MiB.
        #expect(peak - before < 48 << 20, "resident memory grew by \((peak - before) >> 20) MiB")

        let reader = try live.store.openReader(id)
        #expect(reader.size == Int64(total))
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while offset < Int64(total) {
            let count = try buffer.withUnsafeMutableBytes { try reader.read(into: $0, at: offset) }
            try #require(count == buffer.count, "read at \(offset) of \(total)")
            let start = Int(offset) % chunk.count
            #expect(buffer[0..<16].elementsEqual(chunk[start..<(start + 16)]), "bytes at \(offset)")
            offset += Int64(count)
        }
    }

    /// A prefix with characters that SigV4 percent-encodes and that engines decode differently in paths, list
    /// queries, list replies (XML entities) and `x-amz-copy-source`: written in one PUT and as a multipart upload,
    /// composed, listed, read back and deleted.
    @Test func aPrefixWithReservedCharactersWorksEverywhere() throws {
        let live = try LiveS3(partSize: 5 << 20, maxCopyBytes: 5 << 20, prefixStem: "odd dir+=&;,'é~!*()$@:/x-")
        let small = BlobID.random()
        let large = BlobID.random()
        let smallBytes = pattern(1_000, seed: 5)
        let largeBytes = pattern((11 << 20) + 3, seed: 6)
        for (id, bytes) in [(small, smallBytes), (large, largeBytes)] {
            let writer = try live.store.makeWriter(id, at: 0)
            try writer.write(bytes)
            try writer.sync()
            writer.close()
        }
        #expect(try live.store.allBlobIDs() == [small, large].sorted { $0.rawValue < $1.rawValue })
        let composed = BlobID.random()
        _ = try live.store.composeBlob(
            composed, from: [BlobSlice(large, length: Int64(largeBytes.count)), BlobSlice(small, length: 1_000)])
        #expect(try live.anotherNode().openReader(composed).readAll(chunk: 4 << 20) == largeBytes + smallBytes)
        for id in [small, large, composed] { try live.store.deleteBlob(id) }
        #expect(try live.store.allBlobIDs().isEmpty)
    }

    @Test func wrongCredentialsArePermissionDenied() throws {
        var configuration = try LiveS3().configuration
        configuration.credentials.secretAccessKey += "-wrong"
        configuration.maxAttempts = 1
        let store = S3BlobStore(configuration: configuration)
        let error = #expect(throws: StorageError.self) { _ = try store.openReader(.random()) }
        #expect(error?.code == .permissionDenied)
        #expect((error?.cause as? S3Error)?.status == 403)
    }

    @Test func aMissingBucketIsReported() throws {
        var configuration = try LiveS3().configuration
        configuration.bucket = "silo-missing-\(BlobID.random().rawValue.prefix(12))"
        configuration.maxAttempts = 1
        let error = #expect(throws: S3Error.self) { try S3BlobStore(configuration: configuration).checkBucket() }
        #expect(error?.code == .notFound)
        try S3BlobStore(url: liveS3URL ?? "").checkBucket()
    }
}

/// Ad hoc throughput against the live store, printed, not asserted: `SILO_S3_BENCH=1 make s3-test`.
@Suite(
    .enabled(if: liveS3URL != nil && ProcessInfo.processInfo.environment["SILO_S3_BENCH"] != nil, "SILO_S3_BENCH unset")
)
struct S3Throughput {
    @Test func put64MiBThenGetIt() throws {
        let live = try LiveS3()
        let chunk = pattern(64 << 10)
        let total = 64 << 20
        for round in 1...3 {
            let id = BlobID.random()
            let clock = ContinuousClock()
            let putTime = try clock.measure {
                let writer = try live.store.makeWriter(id, at: 0)
                for _ in 0..<(total / chunk.count) { try writer.write(chunk) }
                try writer.sync()
                writer.close()
            }
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            let getTime = try clock.measure {
                let reader = try live.store.openReader(id)
                var offset: Int64 = 0
                while true {
                    let count = try buffer.withUnsafeMutableBytes { try reader.read(into: $0, at: offset) }
                    if count == 0 { break }
                    offset += Int64(count)
                }
                #expect(offset == Int64(total))
            }
            func rate(_ duration: Duration) -> String {
                let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
                return String(Int(Double(total >> 20) / seconds)) + " MiB/s"
            }
            print("S3 throughput round \(round): 64 MiB PUT \(rate(putTime)), GET (64 KiB reads) \(rate(getTime))")
            try live.store.deleteBlob(id)
        }
    }
}
