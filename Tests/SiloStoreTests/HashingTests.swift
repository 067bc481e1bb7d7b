import SiloCore
import Testing

@testable import SiloHashing

@Suite struct HashingTests {
    @Test func md5OfEmptyInputMatchesGCS() {
        #expect(Base64.encode(MD5Hasher.digest([UInt8]())) == "1B2M2Y8AsgTpgAmY7PhCfg==")
    }

    /// RFC 1321's test suite (its appendix A.5).
    @Test(arguments: [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
        (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
    ])
    func md5OfKnownText(text: String, digest: String) {
        #expect(MD5Hasher.digest(Array(text.utf8)) == hex(digest))
    }

    /// Every length from 0 to 300 bytes, so every position of the end against the 64-byte block and its padding (a
    /// second block when 56 or more bytes are left over): the MD5 of the 301 digests one after another, as Python's
    /// hashlib (OpenSSL's MD5) computes it. The CRC-32C the fused pass computes alongside is ISA-L's at every length.
    ///
    /// At every implementation level CMD5 has on this CPU (the test names the highest it ran).
    @Test(arguments: 0...MD5Hasher.level)
    func md5AndCRC32CAtEveryLengthAroundTheBlockSize(level: Int) {
        let pattern = (0..<300).map { UInt8(($0 * 31 + 7) % 251) }
        var digests: [UInt8] = []
        for length in 0...300 {
            let bytes = Array(pattern.prefix(length))
            let md5 = MD5Hasher(level: level)
            md5.update(bytes)
            digests += md5.finalize()
            let hasher = ObjectHasher(md5Level: level)
            // In two pieces, so that the fused pass also starts from a partial block.
            hasher.update(bytes.prefix(length / 3))
            hasher.update(bytes.dropFirst(length / 3))
            let summary = hasher.finalize()
            #expect(summary.md5 == digests.suffix(16), "length \(length)")
            #expect(summary.crc32c == CRC32C.checksum(bytes), "length \(length)")
        }
        #expect(MD5Hasher.digest(digests) == hex("8b24485fb15c18e4fe28d81b19a804c7"))
    }

    @Test func crc32cCheckValues() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(CRC32C().value == 0)
        // GCS's base64 form of a known crc32c is big-endian bytes.
        #expect(CRC32C.bigEndianBytes(0xE306_9283) == [0xE3, 0x06, 0x92, 0x83])
    }

    /// What composed objects rely on: the CRC of a concatenation from the parts' CRCs and lengths alone, at every
    /// split of a buffer (empty parts included) and folded over many parts.
    @Test func crc32cOfAConcatenationFromThePartsCRCs() {
        var rng = SplitMix(seed: 7)
        let bytes = (0..<3_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let whole = CRC32C.checksum(bytes)
        for split in [0, 1, 2, 3, 4, 7, 8, 255, 256, 1_024, 2_999, 3_000] {
            let a = CRC32C.checksum(bytes[..<split])
            let b = CRC32C.checksum(bytes[split...])
            #expect(CRC32C.combine(a, b, secondLength: Int64(bytes.count - split)) == whole, "split at \(split)")
        }
        var folded = CRC32C.checksum([UInt8]())
        var start = 0
        for length in [0, 1, 5, 0, 64, 1_000, 1_930] {
            let part = bytes[start..<(start + length)]
            folded = CRC32C.combine(folded, CRC32C.checksum(part), secondLength: Int64(length))
            start += length
        }
        #expect(start == bytes.count)
        #expect(folded == whole)
        // A long second part (23 set bits in its length) against the CRC of the whole, computed directly.
        let long = [UInt8](repeating: 0xA5, count: 5 << 20 | 12_345)
        #expect(
            CRC32C.combine(CRC32C.checksum(bytes), CRC32C.checksum(long), secondLength: Int64(long.count))
                == CRC32C.checksum(bytes + long))
    }

    @Test(arguments: [0, 1, 7, 4096, 100_003], 0...MD5Hasher.level)
    func chunkingInvariance(length: Int, level: Int) {
        var rng = SplitMix(seed: UInt64(length))
        let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let whole = ObjectHasher()
        whole.update(bytes)
        let expected = whole.finalize()

        // At `level`, against the whole at the level this CPU runs.
        let byteAtATime = ObjectHasher(md5Level: level)
        for byte in bytes { byteAtATime.update(CollectionOfOne(byte)) }
        #expect(byteAtATime.finalize() == expected)

        for _ in 0..<5 {
            let split = ObjectHasher(md5Level: level)
            var index = 0
            while index < bytes.count {
                let end = min(bytes.count, index + Int.random(in: 0...max(1, length / 3), using: &rng))
                bytes[index..<end].withUnsafeBytes { split.update($0) }
                index = end
            }
            #expect(split.finalize() == expected)
        }
        #expect(expected.size == Int64(length))
        #expect(expected.md5 == MD5Hasher.digest(bytes))
        #expect(expected.crc32c == CRC32C.checksum(bytes))
    }

    @Test func gzipRoundTripOfFiveMiBWithBoundedMemory() throws {
        let total = 5 * 1024 * 1024
        let chunkSize = 64 * 1024
        let outputBufferSize = 16 * 1024
        var rng = SplitMix(seed: 42)
        // Half-compressible input: random words from a small vocabulary.
        let vocabulary = (0..<64).map { _ in
            (0..<Int.random(in: 1...12, using: &rng)).map { _ in UInt8.random(in: 97...122, using: &rng) }
        }

        let deflater = try GzipDeflater(outputBufferSize: outputBufferSize)
        let inflater = try GzipInflater(outputBufferSize: outputBufferSize)
        var sourceCRC = CRC32C()
        var outputCRC = CRC32C()
        var outputSize = 0
        var largestPiece = 0
        var compressedSize = 0
        // Compressed pieces go straight into the inflater: nothing is ever held whole.
        let sink: (UnsafeRawBufferPointer) throws -> Void = { compressed in
            compressedSize += compressed.count
            try inflater.feed(compressed) { piece in
                largestPiece = max(largestPiece, piece.count)
                outputSize += piece.count
                outputCRC.update(piece)
            }
        }
        var produced = 0
        var chunk = [UInt8]()
        chunk.reserveCapacity(chunkSize + 16)
        while produced < total {
            chunk.removeAll(keepingCapacity: true)
            while chunk.count < chunkSize { chunk += vocabulary[Int.random(in: 0..<64, using: &rng)] + [32] }
            let piece = chunk.prefix(min(chunkSize, total - produced))
            piece.withUnsafeBytes { sourceCRC.update($0) }
            try piece.withUnsafeBytes { try deflater.feed($0, sink) }
            produced += piece.count
        }
        try deflater.finish(sink)
        try inflater.finish()
        #expect(outputSize == total)
        #expect(outputCRC.value == sourceCRC.value)
        #expect(largestPiece <= outputBufferSize)
        #expect(compressedSize < total)
    }

    @Test func gunzipAcceptsConcatenatedMembers() throws {
        let first = try GzipDeflater.compress(Array("hello ".utf8))
        let second = try GzipDeflater.compress(Array("world".utf8))
        for split in [1, first.count, first.count + 3] {
            let all = first + second
            #expect(try gunzip([Array(all[..<split]), Array(all[split...])]) == Array("hello world".utf8))
        }
    }

    @Test func gunzipRejectsInvalidAndTruncatedInput() throws {
        #expect(throws: StorageError.self) { try gunzip([Array("not gzip at all".utf8)]) }
        let good = try GzipDeflater.compress(Array(repeating: 7, count: 1000))
        #expect(throws: StorageError.self) { try gunzip([Array(good.dropLast(4))]) }
        #expect(throws: StorageError.self) { try gunzip([good + [0x00, 0x01, 0x02]]) }
        #expect(throws: StorageError.self) { try gunzip([]) }
        var corrupted = good
        corrupted[good.count - 6] ^= 0xFF  // CRC trailer
        #expect(throws: StorageError.self) { try gunzip([corrupted]) }
    }

    @Test func gunzipEnforcesOutputLimit() throws {
        let bomb = try GzipDeflater.compress(Array(repeating: 0, count: 1 << 20))
        let inflater = try GzipInflater(maxOutputSize: 1000)
        let error = #expect(throws: StorageError.self) { try inflater.feed(bomb) { _ in } }
        #expect(error?.code == .payloadTooLarge)
    }

    private func gunzip(_ chunks: [[UInt8]]) throws -> [UInt8] {
        let inflater = try GzipInflater(outputBufferSize: 7)
        var out = [UInt8]()
        for chunk in chunks { try inflater.feed(chunk) { out.append(contentsOf: $0) } }
        try inflater.finish()
        return out
    }
}

func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    return stride(from: 0, to: digits.count, by: 2).map {
        UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
    }
}

/// A seeded generator so failures reproduce.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
