import Foundation
import SiloCore
import SiloDisk
import SiloS3
import Testing

/// Every BlobStore the conformance suite runs against.
enum BlobBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, disk
    /// An S3-compatible store named by `SILO_TEST_S3_URL` (e.g. SeaweedFS from `scripts/seaweedfs-up.sh`), with
    /// credentials from the AWS environment variables; each fixture gets a fresh key prefix in that bucket.
    case s3

    /// The S3 endpoint for `.s3`, nil when that backend is not configured.
    static let s3URL = ProcessInfo.processInfo.environment["SILO_TEST_S3_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// The configured backends: `.s3` only when `SILO_TEST_S3_URL` names a store (`S3Conformance` reports the skip).
    static var allCases: [BlobBackend] { s3URL == nil ? [.memory, .disk] : [.memory, .disk, .s3] }

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
        case .s3:
            guard let url = Self.s3URL else { throw StorageError(.invalidArgument, "SILO_TEST_S3_URL is not set") }
            var configuration = try S3BlobStore.Configuration(url: url)
            configuration.prefix += (configuration.prefix.isEmpty ? "" : "/") + "conformance-\(BlobID.random())"
            let store = S3BlobStore(configuration: configuration)
            return BlobFixture(
                store: store, directory: nil, reopenStore: { S3BlobStore(configuration: configuration) },
                allBlobIDs: { try store.allBlobIDs() }, keepAlive: S3PrefixCleanup(store: store))
        }
    }
}

/// Makes the S3 backend's absence visible in the test report instead of silently running fewer cases.
@Suite struct S3Conformance {
    @Test(
        "Blob conformance suite on S3",
        .enabled(if: BlobBackend.s3URL != nil, "SILO_TEST_S3_URL is not set; run make s3-test for the S3 cases"))
    func s3BackendIsInTheConformanceRun() {
        #expect(BlobBackend.allCases.contains(.s3))
    }
}

/// Deletes every blob a test left under its S3 prefix.
final class S3PrefixCleanup {
    let store: S3BlobStore
    init(store: S3BlobStore) { self.store = store }
    deinit {
        for id in (try? store.allBlobIDs()) ?? [] { try? store.deleteBlob(id) }
    }
}

final class BlobFixture {
    private(set) var store: any BlobStore
    let directory: TempDirectory?
    private let reopenStore: () throws -> any BlobStore
    let allBlobIDs: () throws -> [BlobID]
    /// Released with the fixture (e.g. the cleanup of an S3 prefix).
    let keepAlive: AnyObject?

    init(
        store: any BlobStore, directory: TempDirectory?, reopenStore: @escaping () throws -> any BlobStore,
        allBlobIDs: @escaping () throws -> [BlobID], keepAlive: AnyObject? = nil
    ) {
        self.store = store
        self.directory = directory
        self.keepAlive = keepAlive
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
