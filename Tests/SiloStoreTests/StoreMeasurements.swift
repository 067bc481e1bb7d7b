import Foundation
import SiloCore
import SiloDisk
import SiloSQLite
import SiloTesting
import Testing

/// Ad-hoc throughput numbers, printed, not asserted. Run with `SILO_STORE_MEASURE=1 swift test --filter StoreMeasurements`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["SILO_STORE_MEASURE"] != nil), .serialized)
struct StoreMeasurements {
    private func rate(_ label: String, _ count: Int, _ body: () throws -> Void) rethrows {
        let start = ContinuousClock.now
        try body()
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        let each = String(format: "%.3f", seconds * 1000 / Double(count))
        print(
            "MEASURE \(label): \(count) in \(String(format: "%.2f", seconds)) s = \(Int(Double(count) / seconds))/s, \(each) ms each"
        )
    }

    @Test(arguments: [SQLiteMetadataStore.Configuration.Synchronous.full, .normal])
    func sqliteInserts(_ synchronous: SQLiteMetadataStore.Configuration.Synchronous) throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        var configuration = SQLiteMetadataStore.Configuration()
        configuration.synchronous = synchronous
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite", configuration: configuration)
        let count = 2_000
        try rate("sqlite insertObject synchronous=\(synchronous.rawValue), 1 txn each", count) {
            for i in 0..<count { _ = try store.insertUploaded(draft("bench/\(i)"), conditions: .none, at: .now()) }
        }
        try rate("sqlite object() point lookup", 20_000) {
            for i in 0..<20_000 {
                _ = try store.object(bucketName(), objectName("bench/\(i % count)"), generation: nil)
            }
        }
        try rate("sqlite listObjects 1000 per page", 200) {
            for _ in 0..<200 { _ = try store.listObjects(bucketName(), prefix: "bench/", startAfter: nil, limit: 1000) }
        }
        try rate("sqlite listObjectVersions 1000 per page", 200) {
            for _ in 0..<200 {
                _ = try store.listObjectVersions(bucketName(), prefix: "bench/", startAfter: nil, limit: 1000)
            }
        }
    }

    @Test func diskSmallBlobWriteAndSync() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try DiskBlobStore(root: directory.path + "/blobs")
        let payload = pattern(4096)
        try rate("disk 4 KiB blob create+write+fdatasync+dir fsync", 500) {
            for _ in 0..<500 {
                let writer = try store.makeWriter(.random(), at: 0)
                try writer.write(payload)
                try writer.sync()
                writer.close()
            }
        }
    }
}
