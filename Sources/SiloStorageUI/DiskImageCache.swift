import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The second level: one file per key in a directory of its own (by default under the user's caches directory),
/// bounded by the files' total size, least recently used evicted first. Files are written whole to a temporary
/// name and renamed over the old one, so a crash leaves the old entry or the new
/// one, never a torn file. A file's modification time is its last use, so the order survives restarts: a new cache
/// on the same directory rebuilds its index from the directory listing.
///
/// Failures to read or write are not errors of the load: a file that cannot be written is simply not cached, one
/// that cannot be read (or does not parse, or holds another key) is removed and counts as a miss.
actor DiskImageCache {
    /// `SILOIMG1`, then the header length (UInt32, big-endian), the JSON header, and the bytes.
    private static let magic = Data("SILOIMG1".utf8)
    /// A header holds a key (a Firebase object path is at most 1 KiB of UTF-8) and two short validators.
    private static let maxHeaderBytes = 16 << 10
    private static let fileExtension = "img"

    private struct Header: Codable {
        var key: ImageCacheKey
        var generation: Int64?
        var etag: String?
        var contentType: String?
        var validatedAt: Double
    }

    let directory: URL
    let capacity: Int
    private var order = LRUIndex<String>()
    private var loaded = false
    /// The latest use stamp given to a file (see `markUsed`).
    private var lastUse = Date.distantPast

    init(directory: URL, capacity: Int) {
        self.directory = directory
        self.capacity = max(0, capacity)
    }

    func entry(_ key: ImageCacheKey) -> ImageCacheEntry? {
        loadIndex()
        let stem = key.fileStem
        guard order.contains(stem) else { return nil }
        let url = fileURL(stem)
        guard let file = try? Data(contentsOf: url), let entry = Self.decode(file), entry.key == key else {
            remove(stem)
            return nil
        }
        order.touch(stem)
        markUsed(url)
        return entry
    }

    /// Writes `entry` over any other generation of its key, then evicts down to the capacity.
    func store(_ entry: ImageCacheEntry) {
        loadIndex()
        let stem = entry.key.fileStem
        guard let file = Self.encode(entry), file.count <= capacity else {
            remove(stem)
            return
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            // Written whole under a temporary name, then renamed over the entry: readers see the old file or the
            // new one. No fsync: a cache may lose entries in a crash, but never holds a torn one after rename.
            let temporary = directory.appendingPathComponent("\(stem).img.\(UUID().uuidString).tmp")
            try file.write(to: temporary)
            guard rename(temporary.path, fileURL(stem).path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                throw CocoaError(.fileWriteUnknown)
            }
        } catch {
            remove(stem)
            return
        }
        markUsed(fileURL(stem))
        order.use(stem, cost: file.count)
        for evicted in order.evict(toFit: capacity) { try? FileManager.default.removeItem(at: fileURL(evicted)) }
    }

    func remove(_ key: ImageCacheKey) {
        loadIndex()
        remove(key.fileStem)
    }

    /// Bytes of the files held now (headers included).
    var totalBytes: Int {
        loadIndex()
        return order.totalCost
    }

    /// Sets the file's modification time to a use stamp that is later than every earlier one: the clock's own
    /// ticks are too coarse (uses within one tick would tie, and the order after a restart would be a guess).
    private func markUsed(_ url: URL) {
        lastUse = max(Date(), lastUse.addingTimeInterval(0.001))
        try? FileManager.default.setAttributes([.modificationDate: lastUse], ofItemAtPath: url.path)
    }

    private func remove(_ stem: String) {
        order.remove(stem)
        try? FileManager.default.removeItem(at: fileURL(stem))
    }

    private func fileURL(_ stem: String) -> URL {
        directory.appendingPathComponent(stem).appendingPathExtension(Self.fileExtension)
    }

    /// Reads the directory once: entries oldest-used first, so the LRU order is the files' modification order.
    /// Temporary files an interrupted atomic write left behind are removed. Then evicts down to the capacity, which
    /// may be smaller than the last process's.
    private func loadIndex() {
        guard !loaded else { return }
        loaded = true
        let fm = FileManager.default
        let keys: [URLResourceKey] = [.contentModificationDateKey, .fileSizeKey, .isRegularFileKey]
        guard let urls = try? fm.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys) else { return }
        var found: [(stem: String, used: Date, size: Int)] = []
        for url in urls {
            guard let values = try? url.resourceValues(forKeys: Set(keys)), values.isRegularFile == true else {
                continue
            }
            let name = url.lastPathComponent
            let stem = String(name.prefix(16))
            guard stem.count == 16, stem.allSatisfy(\.isHexDigit), name.dropFirst(16).hasPrefix(".img") else {
                continue  // not ours: left alone
            }
            guard name.count == 16 + 4 else {
                // `<stem>.img` plus something: a temporary file an interrupted atomic write left behind.
                try? fm.removeItem(at: url)
                continue
            }
            found.append((stem, values.contentModificationDate ?? .distantPast, values.fileSize ?? 0))
        }
        for file in found.sorted(by: { $0.used < $1.used }) { order.use(file.stem, cost: file.size) }
        lastUse = max(lastUse, found.map(\.used).max() ?? .distantPast)
        for evicted in order.evict(toFit: capacity) { try? fm.removeItem(at: fileURL(evicted)) }
    }

    private static func encode(_ entry: ImageCacheEntry) -> Data? {
        let header = Header(
            key: entry.key, generation: entry.generation, etag: entry.etag, contentType: entry.contentType,
            validatedAt: entry.validatedAt.timeIntervalSince1970)
        guard let json = try? JSONEncoder().encode(header), json.count <= maxHeaderBytes else { return nil }
        var file = Data(capacity: magic.count + 4 + json.count + entry.data.count)
        file.append(magic)
        withUnsafeBytes(of: UInt32(json.count).bigEndian) { file.append(contentsOf: $0) }
        file.append(json)
        file.append(entry.data)
        return file
    }

    private static func decode(_ file: Data) -> ImageCacheEntry? {
        let bytes = [UInt8](file.prefix(magic.count + 4))
        guard bytes.count == magic.count + 4, Data(bytes.prefix(magic.count)) == magic else { return nil }
        let length = bytes[magic.count...].reduce(0) { $0 << 8 | Int($1) }
        let start = file.startIndex + magic.count + 4
        guard length <= maxHeaderBytes, file.count >= magic.count + 4 + length,
            let header = try? JSONDecoder().decode(Header.self, from: file[start..<start + length])
        else { return nil }
        return ImageCacheEntry(
            key: header.key, generation: header.generation, etag: header.etag, contentType: header.contentType,
            validatedAt: Date(timeIntervalSince1970: header.validatedAt), data: Data(file[(start + length)...]))
    }
}
