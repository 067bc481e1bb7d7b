import SiloCore
import SiloHashing
import SiloServerKit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Transformed results on disk, one file each, named by the SHA-256 of (bucket, object, generation, parameters),
/// bounded in bytes: beyond `maxBytes` the least recently used files are deleted. An object version's bytes never
/// change, so an entry never goes stale; an overwrite has a new generation and so new keys. The index lives in
/// memory; the directory is emptied when the cache starts, so no file outlives the index that bounds it.
package final class ThumbnailCache: Sendable {
    struct Key: Hashable, Sendable {
        let bucket: BucketName
        let name: ObjectName
        let generation: Int64
        let spec: ThumbnailSpec

        /// The file name: bucket and object names may hold any character, a digest holds none that matters.
        var fileName: String {
            let text = "\(bucket)\u{0}\(name.rawValue)\u{0}\(generation)\u{0}\(spec)"
            return SHA256.digest(text.utf8).map { byte in
                let hex = Array("0123456789abcdef".utf8)
                return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }.joined() + ".thumb"
        }
    }

    private struct Entry {
        let file: String
        let bytes: Int64
        var lastUse: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes: Int64 = 0
        var clock: UInt64 = 0
    }

    let directory: String
    let maxBytes: Int64
    private let state = Mutex(State())

    /// Creates `directory` if needed and deletes the results a previous run left there.
    init(directory: String, maxBytes: Int64) throws {
        self.directory = directory
        self.maxBytes = max(0, maxBytes)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw StorageError(.ioError, "cannot create the thumbnail cache directory \(directory): errno \(errno)")
        }
        guard let dir = opendir(directory) else {
            throw StorageError(.ioError, "cannot read the thumbnail cache directory \(directory): errno \(errno)")
        }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.hasSuffix(".thumb") || name.hasSuffix(".tmp") { unlink(directory + "/" + name) }
        }
    }

    /// The cached result, or nil (never stored, evicted, or its file vanished).
    func bytes(_ key: Key) -> [UInt8]? {
        let file: String? = state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return entry.file
        }
        guard let file else { return nil }
        return readSmallFile(directory + "/" + file, limit: 64 << 20)
    }

    /// The length of the cached result, from the index alone (no I/O: a HEAD answers with it on the event loop);
    /// counts as a use, as a read does.
    /// `waiting: false` is for an event loop, which must not sleep: a lock another thread holds throws ``Busy``.
    func length(_ key: Key, waiting: Bool) throws(Busy) -> Int64? {
        func touch(_ state: inout State) -> Int64? {
            guard var entry = state.entries[key] else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return entry.bytes
        }
        if waiting { return state.withLock { touch(&$0) } }
        guard let found = state.withLockIfAvailable({ touch(&$0) }) else { throw Busy() }
        return found
    }

    /// The cache's lock was held by another thread and the caller may not wait.
    struct Busy: Error {}

    /// Stores a result (write to a temporary file, then rename: a reader never sees a partial file), then evicts
    /// the least recently used entries beyond the bound. A result larger than a quarter of the bound is not kept.
    func insert(_ bytes: [UInt8], for key: Key) {
        let size = Int64(bytes.count)
        guard size <= maxBytes / 4 else { return }
        let file = key.fileName
        let path = directory + "/" + file
        let temporary = path + ".\(UInt32.random(in: 0...UInt32.max)).tmp"
        guard createFile(temporary, bytes, durable: false), rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
        let evicted: [String] = state.withLock { state in
            if let old = state.entries[key] { state.bytes -= old.bytes }
            state.clock += 1
            state.entries[key] = Entry(file: file, bytes: size, lastUse: state.clock)
            state.bytes += size
            guard state.bytes > maxBytes else { return [] }
            // Down to 90% of the bound at once, so eviction (a sort) runs once per many inserts, not on each.
            var victims: [String] = []
            for (victim, entry) in state.entries.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
                guard state.bytes > maxBytes / 10 * 9 else { break }
                state.entries[victim] = nil
                state.bytes -= entry.bytes
                victims.append(entry.file)
            }
            return victims
        }
        for victim in evicted { unlink(directory + "/" + victim) }
    }

    /// Bytes held (what the bound is checked against).
    var heldBytes: Int64 { state.withLock { $0.bytes } }
    var count: Int { state.withLock { $0.entries.count } }
}
