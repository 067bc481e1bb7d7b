import SiloCore
import SiloDisk

/// Every BlobStore the conformance suite runs against.
enum BlobBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, disk

    var description: String { rawValue }

    func open() throws -> BlobFixture {
        switch self {
        case .memory:
            let store = InMemoryBlobStore()
            return BlobFixture(
                store: store, directory: nil, reopenStore: { store }, allBlobIDs: { try store.allBlobIDs() })
        case .disk:
            let directory = try TempDirectory()
            let root = directory.path + "/data/blobs"
            let store = try DiskBlobStore(root: root)
            return BlobFixture(
                store: store, directory: directory, reopenStore: { try DiskBlobStore(root: root) },
                allBlobIDs: { try DiskBlobStore(root: root).allBlobIDs() })
        }
    }
}

final class BlobFixture {
    private(set) var store: any BlobStore
    let directory: TempDirectory?
    private let reopenStore: () throws -> any BlobStore
    let allBlobIDs: () throws -> [BlobID]

    init(
        store: any BlobStore, directory: TempDirectory?, reopenStore: @escaping () throws -> any BlobStore,
        allBlobIDs: @escaping () throws -> [BlobID]
    ) {
        self.store = store
        self.directory = directory
        self.reopenStore = reopenStore
        self.allBlobIDs = allBlobIDs
    }

    func reopen() throws { store = try reopenStore() }
}

extension BlobWriter {
    func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }
}

extension BlobReader {
    func readAll(chunk: Int = 4096) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try read(into: $0, at: Int64(out.count)) }
            if count == 0 { return out }
            out += buffer[..<count]
        }
    }

    func read(_ count: Int, at offset: Int64) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = try buffer.withUnsafeMutableBytes { try read(into: $0, at: offset) }
        return Array(buffer[..<got])
    }
}

func pattern(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) &+ seed }
}
