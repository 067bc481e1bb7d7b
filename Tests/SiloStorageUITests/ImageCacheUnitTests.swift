import Foundation
import SiloStorage
import Testing

@testable import SiloStorageUI

@Suite struct ImageCacheUnitTests {
    @Test func lruEvictsOldestUseFirstAndKeepsItsQueueSmall() {
        var lru = LRUIndex<String>()
        lru.use("a", cost: 10)
        lru.use("b", cost: 10)
        lru.use("c", cost: 10)
        lru.touch("a")
        #expect(lru.evict(toFit: 20) == ["b"])
        lru.use("c", cost: 25)
        #expect(lru.totalCost == 35)
        #expect(lru.evict(toFit: 30) == ["a"])
        #expect(lru.count == 1 && lru.totalCost == 25)
        for _ in 0..<10_000 { lru.touch("c") }
        #expect(lru.evict(toFit: 0) == ["c"] && lru.totalCost == 0)
    }

    @Test func transformsAreCheckedWhereTheyAreMade() throws {
        #expect(throws: StorageError.self) { try StorageImageTransform(width: 0, height: 10) }
        #expect(throws: StorageError.self) {
            try StorageImageTransform(width: 10, height: StorageImageTransform.maxDimension + 1)
        }
        #expect(throws: StorageError.self) { try StorageImageTransform(width: 10, height: 10, quality: 101) }
        #expect(
            try StorageImageTransform(width: 64, height: 32, format: .avif).description
                == "width=64&height=32&format=avif")
    }

    @Test func keysDifferByEveryPart() {
        let base = ImageCacheKey(bucket: "b", path: "p", variant: "")
        let others = [
            ImageCacheKey(bucket: "b2", path: "p", variant: ""), ImageCacheKey(bucket: "b", path: "p2", variant: ""),
            ImageCacheKey(bucket: "b", path: "p", variant: "width=1"),
            ImageCacheKey(bucket: "bp", path: "", variant: ""),
        ]
        for other in others { #expect(other.fileStem != base.fileStem) }
        #expect(base.fileStem.count == 16)
    }

    @Test func aDiskFileThatDoesNotParseIsAMissAndIsRemoved() async throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("silo-ui-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = ImageCacheKey(bucket: "b", path: "x.png", variant: "")
        let cache = DiskImageCache(directory: dir, capacity: 1 << 20)
        await cache.store(
            ImageCacheEntry(
                key: key, generation: 1, etag: "\"e\"", contentType: "image/png", validatedAt: Date(),
                data: Data([1, 2, 3])))
        #expect(await cache.entry(key)?.data == Data([1, 2, 3]))
        let file = dir.appendingPathComponent(key.fileStem + ".img")
        try Data("SILOIMG1garbage".utf8).write(to: file)
        let reopened = DiskImageCache(directory: dir, capacity: 1 << 20)
        #expect(await reopened.entry(key) == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        // Files that are not the cache's are left alone.
        let foreign = dir.appendingPathComponent("notes.txt")
        try Data("keep".utf8).write(to: foreign)
        _ = await DiskImageCache(directory: dir, capacity: 0).totalBytes
        #expect(FileManager.default.fileExists(atPath: foreign.path))
    }
}
