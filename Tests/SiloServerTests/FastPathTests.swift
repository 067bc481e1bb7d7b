import SiloCore
import Testing

@testable import SiloServer

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
        #expect(cache.bytes(ids[0]) == [1, 2, 3, 4])
        cache.insert(ids[2], [9, 9, 9])  // 11 bytes: the oldest goes
        #expect(cache.bytes(ids[0]) == nil)
        #expect(cache.bytes(ids[1]) == [5, 6, 7, 8])
        #expect(cache.bytes(ids[2]) == [9, 9, 9])
        cache.insert(ids[3], [UInt8](repeating: 0, count: 7))  // larger than an entry may be
        #expect(cache.bytes(ids[3]) == nil)
        #expect(SmallBlobCache(capacityBytes: 0, maxEntryBytes: 6).bytes(ids[1]) == nil)
    }

    @Test(arguments: [
        "/v0/b/bucket/o/a%2Fb%20c", "/v0/b/bucket/o/plain/name", "/v0/b/bucket/o", "/v0/b/bucket/o/", "/", "",
        "/v0/b/b%ZZ/o/x", "/storage/v1/b/bucket/o/x%2Fy",
    ])
    func routeParsingIsUnchanged(_ path: String) {
        let parsed = try? Route.parse(path)
        let expected: Route?
        switch path {
        case "/v0/b/bucket/o/a%2Fb%20c": expected = .firebaseObject(try! BucketName("bucket"), try! ObjectName("a/b c"))
        case "/v0/b/bucket/o/plain/name":
            expected = .firebaseObject(try! BucketName("bucket"), try! ObjectName("plain/name"))
        case "/v0/b/bucket/o", "/v0/b/bucket/o/": expected = .firebaseBucket(try! BucketName("bucket"))
        case "/": expected = .probe
        case "": expected = .unknown
        case "/storage/v1/b/bucket/o/x%2Fy": expected = .gcsObject(try! BucketName("bucket"), try! ObjectName("x/y"))
        default: expected = nil  // malformed escape: an error
        }
        #expect(parsed == expected)
    }
}
