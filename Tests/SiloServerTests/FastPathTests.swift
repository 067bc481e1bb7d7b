import SiloCore
import SiloServer
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// The byte-level fast paths on the download path must answer exactly as the general code they stand in for.
@Suite struct FastPathTests {
    @Test(arguments: [
        "attachment", "inline; filename=a.txt", "INLINE; FILENAME*=utf-8''x", "FileName", "filenam", "file name",
        "xfilenamex", "", "fİlename", "attachment; fılename=x", "filenamé", "Kelvin K filename",
    ])
    func filenameMentionMatchesLowercasedContains(_ text: String) {
        #expect(DownloadResponder.mentionsFilename(text) == text.lowercased().contains("filename"))
    }

    @Test func smallBlobCacheKeepsRecentEntriesWithinItsBudget() throws {
        let cache = SmallBlobCache(capacityBytes: 10, maxEntryBytes: 6)
        let ids = try (0..<4).map { try #require(BlobID(rawValue: String(repeating: "\($0)", count: 32))) }
        cache.insert(ids[0], [1, 2, 3, 4])
        cache.insert(ids[1], [5, 6, 7, 8])
        #expect(cache.bytes(ids[0], waiting: true) == [1, 2, 3, 4])
        cache.insert(ids[2], [9, 9, 9])  // 11 bytes: the oldest goes
        #expect(cache.bytes(ids[0], waiting: true) == nil)
        #expect(cache.bytes(ids[1], waiting: true) == [5, 6, 7, 8])
        #expect(cache.bytes(ids[2], waiting: true) == [9, 9, 9])
        cache.insert(ids[3], [UInt8](repeating: 0, count: 7))  // larger than an entry may be
        #expect(cache.bytes(ids[3], waiting: true) == nil)
        #expect(SmallBlobCache(capacityBytes: 0, maxEntryBytes: 6).bytes(ids[1], waiting: true) == nil)
    }

    @Test(arguments: [
        "/v0/b/bucket/o/a%2Fb%20c", "/v0/b/bucket/o/plain/name", "/v0/b/bucket/o", "/v0/b/bucket/o/", "/", "",
        "/v0/b/b%ZZ/o/x", "/storage/v1/b/bucket/o/x%2Fy",
    ])
    func routeParsingIsUnchanged(_ path: String) {
        let parsed = try? routed(path)
        let expected: RoutedTarget?
        switch path {
        case "/v0/b/bucket/o/a%2Fb%20c":
            expected = .firebase(.object(try! BucketName("bucket"), try! ObjectName("a/b c")))
        case "/v0/b/bucket/o/plain/name":
            expected = .firebase(.object(try! BucketName("bucket"), try! ObjectName("plain/name")))
        case "/v0/b/bucket/o", "/v0/b/bucket/o/": expected = .firebase(.bucket(try! BucketName("bucket")))
        case "/": expected = .kit(.probe)
        case "": expected = .kit(.unknown)
        case "/storage/v1/b/bucket/o/x%2Fy":
            expected = .gcs(.gcsObject(try! BucketName("bucket"), try! ObjectName("x/y")))
        default: expected = nil  // malformed escape: an error
        }
        #expect(parsed == expected)
    }
}

/// ``MemoTable``, under ``TargetMemo``: what it keeps and what it answers must be what parsing answers.
@Suite struct TargetMemoTests {
    /// Parses by counting: the value is the key's bytes, the count says whether the table answered.
    private final class CountingParser {
        var calls = 0
        func parse(_ key: String) throws -> [UInt8] {
            calls += 1
            guard !key.hasPrefix("bad") else { throw StorageError(.invalidArgument, "bad key \(key)") }
            return Array(key.utf8)
        }
    }

    @Test func aRepeatedKeyIsParsedOnce() throws {
        var table = MemoTable<[UInt8]>(slots: 16)
        let parser = CountingParser()
        for _ in 0..<3 {
            #expect(try table.value(for: "/v0/b/x/o/a", parse: parser.parse) == Array("/v0/b/x/o/a".utf8))
        }
        #expect(parser.calls == 1)
    }

    /// "é" and "e\u{301}": equal as `String`s, two keys as bytes. One slot, so each replaces the other there and
    /// the comparison, not the hash, must tell them apart.
    @Test func canonicallyEquivalentKeysAreTwoKeys() throws {
        var table = MemoTable<[UInt8]>(slots: 1)
        let parser = CountingParser()
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        for _ in 0..<2 {
            #expect(try table.value(for: composed, parse: parser.parse) == Array(composed.utf8))
            #expect(try table.value(for: decomposed, parse: parser.parse) == Array(decomposed.utf8))
        }
        #expect(parser.calls == 4)
    }

    @Test func failuresAndLongKeysAreNotKept() throws {
        var table = MemoTable<[UInt8]>(slots: 16)
        let parser = CountingParser()
        for _ in 0..<2 { #expect(throws: StorageError.self) { try table.value(for: "bad%ZZ", parse: parser.parse) } }
        #expect(parser.calls == 2)
        let long = String(repeating: "a", count: TargetMemo.maxKeyBytes + 1)
        for _ in 0..<2 { #expect(try table.value(for: long, parse: parser.parse) == Array(long.utf8)) }
        #expect(parser.calls == 4)
        let longest = String(repeating: "a", count: TargetMemo.maxKeyBytes)
        for _ in 0..<2 { #expect(try table.value(for: longest, parse: parser.parse).count == TargetMemo.maxKeyBytes) }
        #expect(parser.calls == 5)
    }

    /// Far more keys than slots, of every length around the hash's eight-byte steps, asked in two orders: every
    /// answer is the key's own, whatever replaced what.
    @Test func evictionNeverAnswersForAnotherKey() throws {
        var table = MemoTable<[UInt8]>(slots: 8)
        let parser = CountingParser()
        let keys = (0..<200).map { "k\($0)" + String(repeating: "/", count: $0 % 19) } + ["", "\u{0}", "\u{0}\u{0}"]
        for key in keys + keys.reversed() { #expect(try table.value(for: key, parse: parser.parse) == Array(key.utf8)) }
        #expect(parser.calls > 8 && parser.calls < 2 * keys.count)
    }

    /// Keys that differ in one byte anywhere land in different slots often enough to spread over the table.
    @Test func theHashSpreadsNearKeys() {
        let slots = Set(
            (0..<64).map { i -> UInt64 in
                var key = Array("/v0/b/bench.appspot.com/o/small.bin".utf8)
                key[i % key.count] &+= UInt8(1 + i / key.count)
                return key.withUnsafeBufferPointer { $0.spreadHash() } & 31
            })
        #expect(slots.count > 16)
    }
}
