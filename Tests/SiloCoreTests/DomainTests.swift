import SiloCore
import Testing

@Suite struct TimestampTests {
    @Test(
        "formats with exactly three fraction digits and Z",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (Int64(1_607_878_624_162_589), "2020-12-13T16:57:04.162Z"),
            (Int64(951_782_400_000_000), "2000-02-29T00:00:00.000Z"),
            (Int64(-1_000), "1969-12-31T23:59:59.999Z"),
            (Int64(253_402_300_799_999_000), "9999-12-31T23:59:59.999Z"),
        ])
    func formats(micros: Int64, text: String) {
        #expect(Timestamp(microseconds: micros).rfc3339 == text)
        #expect(
            Timestamp(rfc3339: text)?.microseconds == micros / 1000 * 1000
                - (micros < 0 && micros % 1000 != 0 ? 1000 : 0))
    }

    @Test func parsesOffsetsAndPrecision() {
        #expect(Timestamp(rfc3339: "2020-12-13T17:57:04.162589+01:00")?.microseconds == 1_607_878_624_162_589)
        #expect(Timestamp(rfc3339: "2020-12-13T16:57:04Z")?.microseconds == 1_607_878_624_000_000)
        for bad in [
            "", "2020-13-01T00:00:00Z", "2020-12-13 16:57:04", "2020-12-13T16:57:04.Z", "2020-12-13T16:57:04Zjunk",
        ] {
            #expect(Timestamp(rfc3339: bad) == nil, "\(bad)")
        }
    }

    @Test func rfc1123() {
        #expect(Timestamp(microseconds: 784_111_777_000_000).rfc1123 == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}

@Suite struct NameTests {
    @Test func objectNames() throws {
        #expect(throws: StorageError.self) { try ObjectName("") }
        #expect(throws: StorageError.self) { try ObjectName(String(repeating: "x", count: 1025)) }
        #expect(throws: StorageError.self) { try ObjectName("a\nb") }
        #expect(throws: StorageError.self) { try ObjectName(utf8: [0x61, 0xFF]) }
        #expect(try ObjectName(String(repeating: "é", count: 512)).rawValue.utf8.count == 1024)
        #expect(try ObjectName("../..").rawValue == "../..")
        #expect(try ObjectName("dir/file.txt").lastComponent == "file.txt")
    }

    /// Found by fuzz/name: `String`'s `==` and hash treat canonically equivalent text as one ("é" and "e\u{301}",
    /// "\u{212B}" and "\u{C5}"), so names that GCS and the stores keep apart were one key in the caches.
    @Test(
        "names are equal exactly when their bytes are",
        arguments: [("caf\u{E9}", "cafe\u{301}"), ("\u{212B}", "\u{C5}")])
    func byteEquality(a: String, b: String) throws {
        let (x, y) = (try ObjectName(a), try ObjectName(b))
        #expect(x != y)
        #expect(Set([x, y]).count == 2)
        var table: [ObjectName: Int] = [:]
        table[x] = 1
        table[y] = 2
        #expect(table[x] == 1 && table.count == 2)
        #expect(x == (try ObjectName(a)))
        #expect(Set([x, try ObjectName(a)]).count == 1)
    }

    /// Found by fuzz/name: the last component was cut at the last '/' Character, and "/\u{301}" is one Character
    /// that is not "/", so a component starting with a combining mark took the whole path with it.
    @Test func lastComponentFollowsTheLastSlashByte() throws {
        #expect(Array(try ObjectName("a/\u{301}b").lastComponent.utf8) == Array("\u{301}b".utf8))
        #expect(try ObjectName("dir/\u{301}").lastComponent == "\u{301}")
        #expect(try ObjectName("a/b/").lastComponent == "")
        #expect(try ObjectName("plain").lastComponent == "plain")
    }

    @Test("names order by UTF-8 bytes, as GCS lists them")
    func byteOrder() throws {
        let names = try ["é", "a/b", "a-b", "Z", "a\u{1F600}", "a"].map { try ObjectName($0) }
        #expect(names.sorted().map(\.rawValue) == ["Z", "a", "a-b", "a/b", "a\u{1F600}", "é"])
    }

    @Test func bucketNames() throws {
        for good in ["demo.appspot.com", "a", "my-bucket_1", "x.firebasestorage.app"] { _ = try BucketName(good) }
        for bad in ["", "-a", "a-", "a b", "a/b", String(repeating: "a", count: 223)] {
            #expect(throws: StorageError.self) { try BucketName(bad) }
        }
    }
}

@Suite struct EncodingTests {
    @Test func base64() {
        #expect(Base64.encode([]) == "")
        #expect(Base64.encode(Array("f".utf8)) == "Zg==")
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.decode("Zm9vYg==") == Array("foob".utf8))
        #expect(Base64.decode("Zm9vYg") == Array("foob".utf8))
        #expect(Base64.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64.decode("a=b") == nil)
        #expect(Base64.decode("!!") == nil)
        #expect(Base64.encodeURLSafe([0xFB, 0xFF]) == "-_8")
    }

    /// The strict form JWTs need: one spelling per byte string.
    @Test func base64URLStrict() {
        #expect(Base64.decodeURLSafeStrictly(Array("-_8".utf8)) == [0xFB, 0xFF])
        #expect(Base64.decodeURLSafeStrictly(Array("Zm9vYg".utf8)) == Array("foob".utf8))
        #expect(Base64.decodeURLSafeStrictly(Array("Zm9vYg==".utf8)) == nil, "no padding")
        #expect(Base64.decodeURLSafeStrictly(Array("+/8".utf8)) == nil, "no standard alphabet")
        #expect(Base64.decodeURLSafeStrictly(Array("-_9".utf8)) == nil, "leftover bits must be zero")
        #expect(Base64.decodeURLSafeStrictly(Array("Zm9vY".utf8)) == nil, "a lone sextet is no byte")
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64.decodeURLSafeStrictly(Array(Base64.encodeURLSafe(bytes).utf8)) == bytes)
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
    }

    @Test("etag is production's protobuf-style encoding and changes with either generation")
    func etag() throws {
        let record = ObjectRecord(
            bucket: try BucketName("b"), name: try ObjectName("o"), generation: 1_607_878_624_162_589,
            metageneration: 1,
            blob: BlobSummary(size: 0, md5: [], crc32c: 0), blobID: BlobID.random(), fields: ObjectFields(),
            timeCreated: Timestamp(microseconds: 0), updated: Timestamp(microseconds: 0))
        #expect(record.etag == "CJ3m8NG2y+0CEAE=")
        var bumped = record
        bumped.metageneration = 2
        #expect(bumped.etag != record.etag)
    }

    @Test func randomIDs() {
        let uuid = RandomID.uuid()
        #expect(uuid.count == 36 && Array(uuid)[14] == "4")
        #expect(RandomID.uuid() != uuid)
        #expect(BlobID(rawValue: BlobID.random().rawValue) != nil)
        #expect(BlobID(rawValue: "../../etc/passwd") == nil)
    }

    /// Inline ids sort as the times they were made at, whatever their random digits, so the metadata store's
    /// indexes of them grow at one end; ids made in the same microsecond still differ.
    @Test func inlineIDsSortByTheirTime() {
        let times: [Int64] = [
            0, 1, 999, 1_000_000, 1_765_000_000_000_000, 1_765_000_000_000_001, 4_000_000_000_000_000,
        ]
        let made = times.flatMap { microseconds in
            (0..<50).map { _ in (microseconds, BlobID.inline(at: Timestamp(microseconds: microseconds))) }
        }
        for (_, id) in made {
            #expect(id.isInline)
            #expect(BlobID(rawValue: id.rawValue) == id)
        }
        #expect(Set(made.map(\.1)).count == made.count)
        // Ordered by id, the times never go back: every id made earlier sorts before every id made later.
        let timesByID = made.sorted { $0.1.rawValue < $1.1.rawValue }.map(\.0)
        #expect(timesByID == timesByID.sorted())
        #expect(!BlobID.random().isInline)
    }

    @Test func preconditions() throws {
        let record = ObjectRecord(
            bucket: try BucketName("b"), name: try ObjectName("o"), generation: 5, metageneration: 2,
            blob: BlobSummary(size: 0, md5: [], crc32c: 0), blobID: BlobID.random(), fields: ObjectFields(),
            timeCreated: Timestamp(microseconds: 0), updated: Timestamp(microseconds: 0))
        try Preconditions(ifGenerationMatch: 0).check(nil, describing: "o")
        #expect(throws: StorageError.self) { try Preconditions(ifGenerationMatch: 0).check(record, describing: "o") }
        try Preconditions(ifGenerationMatch: 5, ifMetagenerationMatch: 2).check(record, describing: "o")
        #expect(throws: StorageError.self) { try Preconditions(ifGenerationNotMatch: 5).check(record, describing: "o") }
        #expect(throws: StorageError.self) { try Preconditions(ifMetagenerationMatch: 1).check(nil, describing: "o") }
        try Preconditions(ifMetagenerationNotMatch: 1).check(record, describing: "o")
    }
}

@Suite struct ObjectVersionKeyTests {
    @Test(
        arguments: [
            ObjectVersionKey(name: Array("a".utf8), generation: 1),
            ObjectVersionKey(name: Array("dir/é 日本 \u{1F600}".utf8), generation: 1_700_000_000_000_000),
            ObjectVersionKey(name: [], generation: .min),
            ObjectVersionKey(name: [0xFF, 0x01], generation: .max),
            ObjectVersionKey(name: Array("x".utf8), generation: -1),
        ])
    func bytesRoundTrip(_ key: ObjectVersionKey) {
        let bytes = key.bytes
        #expect(bytes.count == key.name.count + 9 && bytes[key.name.count] == 0)
        #expect(ObjectVersionKey(bytes: bytes) == key)
    }

    @Test func generationIsBigEndian() {
        #expect(
            ObjectVersionKey(name: [0x61], generation: 0x0102_0304_0506_0708).bytes == [
                0x61, 0, 1, 2, 3, 4, 5, 6, 7, 8,
            ])
    }

    @Test(
        arguments: [
            [UInt8](), [0, 1, 2, 3, 4, 5, 6, 7], [0x61, 1, 0, 0, 0, 0, 0, 0, 0, 1],
            [0x61, 0, 0x62, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        ])
    func malformedBytesAreRejected(_ bytes: [UInt8]) {
        #expect(ObjectVersionKey(bytes: bytes) == nil)
    }

    @Test func ordersByNameBytesThenGeneration() {
        let keys = [
            ObjectVersionKey(name: Array("b".utf8), generation: 1),
            ObjectVersionKey(name: Array("a".utf8), generation: 9),
            ObjectVersionKey(name: Array("a/".utf8), generation: 2),
            ObjectVersionKey(name: Array("a".utf8), generation: 3),
            ObjectVersionKey(name: Array("é".utf8), generation: 0),
        ]
        #expect(
            keys.sorted().map { "\(String(decoding: $0.name, as: UTF8.self))#\($0.generation)" } == [
                "a#3", "a#9", "a/#2", "b#1", "é#0",
            ])
    }
}

@Suite struct TimestampPrecisionTests {
    @Test func clientTimesReadBackAtTheirPrecision() throws {
        let micro = try #require(Timestamp(rfc3339: "2026-01-02T03:04:05.123456Z"))
        #expect(micro.rfc3339Precise == "2026-01-02T03:04:05.123456Z")
        #expect(micro.rfc3339 == "2026-01-02T03:04:05.123Z")
        let milli = try #require(Timestamp(rfc3339: "2026-01-02T03:04:05.120Z"))
        #expect(milli.rfc3339Precise == "2026-01-02T03:04:05.120Z")
        let small = try #require(Timestamp(rfc3339: "2026-01-02T03:04:05.000007Z"))
        #expect(small.rfc3339Precise == "2026-01-02T03:04:05.000007Z")
        let before1970 = try #require(Timestamp(rfc3339: "1969-12-31T23:59:59.999999Z"))
        #expect(before1970.rfc3339Precise == "1969-12-31T23:59:59.999999Z")
    }
}

/// The byte comparison every name-, path- and target-keyed cache uses (``Swift/String/hasSameUTF8Bytes(as:)``): it
/// must answer as comparing the byte arrays does, at every length around its eight-byte steps and with the
/// difference at every position.
@Suite struct SameBytesTests {
    @Test func agreesWithComparingTheByteArrays() {
        for length in 0...33 {
            let base = (0..<length).map { UInt8(97 + $0 * 7 % 26) }  // ASCII letters: valid UTF-8 however flipped below
            let text = String(decoding: base, as: UTF8.self)
            #expect(text.hasSameUTF8Bytes(as: String(decoding: base, as: UTF8.self)), "length \(length)")
            #expect(!text.hasSameUTF8Bytes(as: text + "x"), "length \(length) against one byte more")
            for position in 0..<length {
                var other = base
                other[position] ^= 1
                #expect(!text.hasSameUTF8Bytes(as: String(decoding: other, as: UTF8.self)), "\(length) at \(position)")
                #expect(!base.withUnsafeBufferPointer { a in other.withUnsafeBufferPointer { a.hasSameBytes(as: $0) } })
            }
        }
    }

    /// Equal as `String`s, different as bytes; and a small string against a native one of the same bytes.
    @Test func canonicalEquivalenceIsNotEquality() {
        #expect("caf\u{E9}" == "cafe\u{301}")
        #expect(!"caf\u{E9}".hasSameUTF8Bytes(as: "cafe\u{301}"))
        let native = String(repeating: "n", count: 40)
        #expect(native.hasSameUTF8Bytes(as: String(decoding: Array(native.utf8), as: UTF8.self)))
        #expect("".hasSameUTF8Bytes(as: ""))
    }
}
