import Foundation
import SiloCore
import Synchronization

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current: Mutex<Int64>
    init(_ microseconds: Int64 = 1_700_000_000_000_000) { current = Mutex(microseconds) }
    func now() -> Timestamp { Timestamp(microseconds: current.withLock { $0 }) }
    func advance(seconds: Int64) { current.withLock { $0 += seconds * 1_000_000 } }
}

/// A fresh directory under the system temp dir, removed when released.
final class TempDirectory: Sendable {
    let path: String
    init() throws {
        let template = NSTemporaryDirectory() + "silo-store-tests-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw StorageError(.ioError, "mkdtemp failed: \(errno)") }
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

func bucketName(_ text: String = "silo-test.appspot.com") -> BucketName { try! BucketName(text) }
func objectName(_ text: String) -> ObjectName { try! ObjectName(text) }

func draft(_ name: String, bucket: BucketName = bucketName(), blobID: BlobID = .random(), size: Int64 = 3)
    -> ObjectDraft
{
    ObjectDraft(
        bucket: bucket, name: objectName(name),
        blob: BlobSummary(size: size, md5: Array(repeating: 0xAB, count: 16), crc32c: 0x1234_5678), blobID: blobID,
        fields: ObjectFields(contentType: "text/plain", customMetadata: ["k": "v"], downloadTokens: ["token-1"]))
}

/// Runs `body` on `threads` threads at once and waits for all of them.
func onThreads(_ threads: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<threads {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.start()
    }
    group.wait()
}
