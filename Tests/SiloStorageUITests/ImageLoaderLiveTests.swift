import Foundation
import SiloStorage
import SiloTesting
import Synchronization
import Testing

@testable import SiloStorageUI

/// `StorageImageLoader` against a live Silo. Whether a load reached the server is read from the server's own
/// request log, never from timing.
@Suite(.timeLimit(.minutes(3))) struct ImageLoaderLiveTests {
    let live: LiveImages
    init() throws { live = try LiveImages() }

    @Test func cacheHitMakesNoRequest() async throws {
        let ref = live.reference("images/a.png")
        let bytes = imageBytes(5000, seed: 1)
        _ = try await ref.putDataAsync(bytes)
        let loader = live.loader(disk: false)
        let first = try await loader.load(ref)
        #expect(first.data == bytes && first.source == .network)
        #expect(live.mediaGETs("images/a.png").count == 1)
        for _ in 0..<3 {
            let again = try await loader.load(ref)
            #expect(again.data == bytes && again.source == .memory)
        }
        #expect(live.mediaGETs("images/a.png").count == 1)
    }

    @Test func diskCacheSurvivesANewLoader() async throws {
        let ref = live.reference("images/disk.png")
        let bytes = imageBytes(7000, seed: 2)
        let uploaded = try await ref.putDataAsync(bytes)
        let first = try await live.loader(name: "kept").load(ref)
        #expect(first.source == .network && first.generation == uploaded.generation)
        // A new loader on the same directory: an app started again.
        let second = live.loader(name: "kept")
        let loaded = try await second.load(ref)
        #expect(loaded.data == bytes && loaded.source == .disk && loaded.generation == uploaded.generation)
        #expect(try await second.load(ref).source == .memory)
        #expect(live.mediaGETs("images/disk.png").count == 1)
    }

    @Test func overwriteShowsTheNewGeneration() async throws {
        let ref = live.reference("images/over.png")
        let old = imageBytes(3000, seed: 3)
        let new = imageBytes(3500, seed: 4)
        let g1 = try await ref.putDataAsync(old).generation
        let loader = live.loader()
        #expect(try await loader.load(ref, generation: g1).data == old)
        let g2 = try await ref.putDataAsync(new).generation
        #expect(g2 > g1)
        // Naming the new generation: the fresh cached copy of the old one is not taken for it.
        let named = try await loader.load(ref, generation: g2)
        #expect(named.data == new && named.generation == g2 && named.source == .network)
        #expect(try await loader.load(ref, generation: g2).source == .memory)
        // Without a generation, once the entry is due for revalidation the server's new ETag replaces the bytes.
        let other = live.loader(name: "other", revalidateAfter: 0)
        let h1 = try await other.load(ref)
        #expect(h1.data == new && h1.generation == g2)
        _ = try await ref.putDataAsync(old)
        let h2 = try await other.load(ref)
        #expect(h2.data == old && h2.source == .network && (h2.generation ?? 0) > g2)
        // The disk copy was replaced too: a new loader on that directory shows the newest bytes.
        let restarted = try await live.loader(name: "other").load(ref)
        #expect(restarted.data == old && restarted.source == .disk)
    }

    @Test func revalidationIs304WithNoBody() async throws {
        let ref = live.reference("images/etag.png")
        let bytes = imageBytes(20000, seed: 5)
        _ = try await ref.putDataAsync(bytes)
        let loader = live.loader(revalidateAfter: 0)
        #expect(try await loader.load(ref).source == .network)
        let before = live.gate.bodyBytes.load(ordering: .relaxed)
        let again = try await loader.load(ref)
        #expect(again.data == bytes && again.source == .revalidated)
        #expect(live.gate.bodyBytes.load(ordering: .relaxed) == before)
        let gets = live.mediaGETs("images/etag.png")
        #expect(gets.count == 2)
        #expect(gets[0].ifNoneMatch == nil && gets[0].status == 200)
        let revalidation = try #require(gets.last)
        #expect(revalidation.ifNoneMatch?.hasPrefix("\"") == true)
        #expect(revalidation.status == 304 && revalidation.bodyLength == 0)
    }

    @Test func concurrentLoadsShareOneRequest() async throws {
        let ref = live.reference("images/shared.png")
        let bytes = imageBytes(40000, seed: 6)
        _ = try await ref.putDataAsync(bytes)
        let loader = live.loader(disk: false)
        live.gate.close()
        let callers = 8
        let results = try await withThrowingTaskGroup(of: StorageImageResult.self) { group in
            for _ in 0..<callers { group.addTask { try await loader.load(ref) } }
            // Released only once every caller has joined the one load under way.
            #expect(await eventually { loader.flights.memberCount == callers && live.gate.heldCount == 1 })
            live.gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == callers && results.allSatisfy { $0.data == bytes })
        #expect(live.mediaGETs("images/shared.png").count == 1)
        #expect(loader.flights.count == 0)
    }

    @Test func cancellingOneCallerKeepsTheLoadCancellingAllStopsIt() async throws {
        let ref = live.reference("images/cancel.png")
        let bytes = imageBytes(9000, seed: 7)
        _ = try await ref.putDataAsync(bytes)
        let loader = live.loader(disk: false)
        live.gate.close()
        let a = Task { try await loader.load(ref) }
        let b = Task { try await loader.load(ref) }
        #expect(await eventually { loader.flights.memberCount == 2 && live.gate.heldCount == 1 })
        a.cancel()
        await #expect(throws: StorageError.self) { try await a.value }
        // The other caller still waits on the same request, which was not cancelled.
        #expect(live.gate.cancelledWhileHeld == 0 && live.gate.heldCount == 1)
        live.gate.open()
        #expect(try await b.value.data == bytes)
        #expect(live.mediaGETs("images/cancel.png").count == 1)

        // Now every caller goes: the request is cancelled before it is sent, and nothing reaches the server.
        let other = live.reference("images/cancel2.png")
        _ = try await other.putDataAsync(bytes)
        live.gate.close()
        let c = Task { try await loader.load(other) }
        let d = Task { try await loader.load(other) }
        #expect(await eventually { loader.flights.memberCount == 2 && live.gate.heldCount == 1 })
        c.cancel()
        d.cancel()
        for task in [c, d] {
            do {
                _ = try await task.value
                Issue.record("a cancelled load returned bytes")
            } catch let error as StorageError {
                #expect(error.code == .cancelled)
            }
        }
        #expect(await eventually { live.gate.cancelledWhileHeld == 1 && live.gate.heldCount == 0 })
        #expect(loader.flights.count == 0)
        live.gate.open()
        #expect(live.mediaGETs("images/cancel2.png").isEmpty)
        // A later load starts afresh.
        #expect(try await loader.load(other).data == bytes)
    }

    @Test func memoryCacheIsBoundedByBytesAndEvictsLeastRecentlyUsed() async throws {
        let loader = live.loader(disk: false, memory: 10_000)
        var refs: [StorageReference] = []
        for i in 0..<5 {
            let ref = live.reference("images/mem\(i).png")
            _ = try await ref.putDataAsync(imageBytes(3000, seed: 10 + UInt64(i)))
            refs.append(ref)
        }
        for ref in refs.prefix(3) { _ = try await loader.load(ref) }
        // mem0 used again, so mem1 is now the least recently used.
        #expect(try await loader.load(refs[0]).source == .memory)
        _ = try await loader.load(refs[3])
        #expect(loader.memoryBytes <= 10_000)
        #expect(try await loader.load(refs[0]).source == .memory)
        #expect(try await loader.load(refs[2]).source == .memory)
        #expect(try await loader.load(refs[1]).source == .network)
        // An image larger than the whole cache is returned but not kept.
        let big = live.reference("images/big.png")
        _ = try await big.putDataAsync(imageBytes(12_000, seed: 20))
        #expect(try await loader.load(big).data.count == 12_000)
        #expect(try await loader.load(big).source == .network)
        #expect(loader.memoryBytes <= 10_000)
    }

    @Test func diskCacheIsBoundedByBytesAndEvictsLeastRecentlyUsed() async throws {
        // No memory cache, so every hit is a disk hit.
        let loader = live.loader(memory: 0, diskCapacity: 10_000)
        var refs: [StorageReference] = []
        for i in 0..<4 {
            let ref = live.reference("images/disk\(i).png")
            _ = try await ref.putDataAsync(imageBytes(3000, seed: 30 + UInt64(i)))
            refs.append(ref)
        }
        for ref in refs.prefix(3) { _ = try await loader.load(ref) }
        #expect(try await loader.load(refs[0]).source == .disk)
        _ = try await loader.load(refs[3])
        #expect(await loader.diskBytes <= 10_000)
        #expect(live.diskUsage() <= 10_000)
        #expect(try await loader.load(refs[0]).source == .disk)
        #expect(try await loader.load(refs[1]).source == .network)
        // A new loader with a smaller bound trims the directory to it, oldest-used first.
        let smaller = live.loader(memory: 0, diskCapacity: 4000)
        #expect(await smaller.diskBytes <= 4000)
        #expect(live.diskUsage() <= 4000)
        #expect(try await smaller.load(refs[1]).source == .disk)
    }

    @Test func thumbnailsAskForParametersAndAreCachedApart() async throws {
        let ref = live.reference("images/thumb.png")
        let bytes = pngImage(width: 600, height: 400)
        _ = try await ref.putDataAsync(bytes)
        let loader = live.loader()
        let small = try StorageImageTransform(width: 256, height: 256, fit: .cover, format: .webp, quality: 80)
        let tiny = try StorageImageTransform(width: 64, height: 64, fit: .contain)
        #expect(try await loader.load(ref).data == bytes)
        // What comes back is the server's thumbnail: the size and format asked for, not the original.
        let smallImage = try await loader.load(ref, transform: small).data
        #expect(Array(smallImage.prefix(4)) == Array("RIFF".utf8))
        #expect(try dimensions(smallImage) == [256, 256])
        let tinyImage = try await loader.load(ref, transform: tiny).data
        #expect(try dimensions(tinyImage) == [64, 43])
        #expect(try await loader.load(ref, transform: small).source == .memory)
        #expect(try await loader.load(ref).source == .memory)
        let queries = live.mediaGETs("images/thumb.png").map(\.query)
        #expect(
            queries == [
                "alt=media", "alt=media&width=256&height=256&fit=cover&format=webp&quality=80",
                "alt=media&width=64&height=64&fit=contain",
            ])
    }

    @Test func errorsAreStorageErrors() async throws {
        let loader = live.loader()
        await #expect(throws: StorageError.self) { try await loader.load(live.reference("images/missing.png")) }
        let ref = live.reference("images/large.png")
        _ = try await ref.putDataAsync(imageBytes(5000, seed: 50))
        let strict = StorageImageLoader(
            configuration: StorageImageLoaderConfiguration(diskDirectory: nil, maxImageSize: 4000))
        do {
            _ = try await strict.load(ref)
            Issue.record("an image over maxImageSize loaded")
        } catch let error as StorageError {
            #expect(error.code == .downloadSizeExceeded)
        }
    }
}
