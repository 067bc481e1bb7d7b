import Foundation
import SiloCore
import Testing

@testable import SiloS3

/// `SILO_TEST_S3_URL` (set by `make s3-test`, or `eval "$(scripts/seaweedfs-up.sh)"`), nil when the live tests skip.
let liveS3URL: String? = ProcessInfo.processInfo.environment["SILO_TEST_S3_URL"].flatMap { $0.isEmpty ? nil : $0 }

/// A store on the live endpoint under a fresh key prefix, emptied when released.
final class LiveS3 {
    let configuration: S3BlobStore.Configuration
    let store: S3BlobStore

    /// `prefixStem` starts the fresh prefix (what an operator may put in the `s3://bucket/prefix` URL).
    init(partSize: Int? = nil, maxReadAhead: Int? = nil, maxCopyBytes: Int64? = nil, prefixStem: String = "s3tests-")
        throws
    {
        var configuration = try S3BlobStore.Configuration(url: liveS3URL ?? "")
        configuration.prefix += (configuration.prefix.isEmpty ? "" : "/") + prefixStem + "\(BlobID.random())"
        if let partSize { configuration.partSize = partSize }
        if let maxReadAhead { configuration.maxReadAhead = maxReadAhead }
        if let maxCopyBytes { configuration.maxCopyBytes = maxCopyBytes }
        self.configuration = configuration
        store = S3BlobStore(configuration: configuration)
    }

    /// Another store instance on the same bucket and prefix: what a second node would open.
    func anotherNode() -> S3BlobStore { S3BlobStore(configuration: configuration) }

    /// The segment objects of `id`, as (start, size).
    func segments(_ id: BlobID) throws -> [(Int64, Int64)] {
        try store.listSegments(id).map { ($0.start, $0.storedSize) }.sorted { $0.0 < $1.0 }
    }

    deinit {
        for id in (try? store.allBlobIDs()) ?? [] { try? store.deleteBlob(id) }
    }
}

extension BlobWriter {
    func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }
}

extension BlobReader {
    func read(_ count: Int, at offset: Int64) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = try buffer.withUnsafeMutableBytes { try read(into: $0, at: offset) }
        return Array(buffer[..<got])
    }

    func readAll(chunk: Int = 64 << 10) throws -> [UInt8] {
        var out: [UInt8] = []
        while true {
            let piece = try read(chunk, at: Int64(out.count))
            if piece.isEmpty { return out }
            out += piece
        }
    }
}

/// Deterministic bytes that differ with position and seed (period 251, so no power-of-two alignment hides a bug).
func pattern(_ count: Int, from start: Int = 0, seed: UInt8 = 0) -> [UInt8] {
    (start..<(start + count)).map { UInt8(truncatingIfNeeded: $0 % 251) &+ seed }
}

/// Resident memory of this process, from /proc/self/statm.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}
