import Dispatch
import SiloCore
import Synchronization

/// Deletes the blobs that successful writes left behind (the version an upload replaced, a deleted object's bytes,
/// the parts of a completed multipart upload) after the request has answered, on one background thread.
///
/// The write is durable once the store's transaction commits; deleting the old bytes is not part of the answer, and
/// on a local disk unlinking a large file costs milliseconds per hundred MiB (51 ms for 256 MiB on ext4, measured in
/// `bench/upload.sh`'s overwrites), which every overwrite and delete used to wait for. Nothing is lost if a
/// deletion never runs: the blob stays on the store's garbage list until the maintenance pass collects it
/// (``Maintenance``), which waits for this queue first, so the two do not race for the same blobs.
///
/// Bounded: at most `limit` deletions wait; past that a blob is left to the collector and counted.
final class BlobReclaimer: Sendable {
    /// Serial and on a thread of its own: an unlink blocks on the file system, and the shared pool's threads are
    /// for hashing.
    private let queue = DispatchQueue(label: "silo.blob-reclaim", qos: .utility)
    private let waiting = Atomic<Int>(0)
    private let leftCount = Atomic<Int>(0)
    let limit: Int

    init(limit: Int = 10_000) {
        self.limit = limit
    }

    /// Runs `delete` (one blob's deletion) after the current request, unless `limit` deletions already wait.
    func reclaim(_ id: BlobID, _ delete: @escaping @Sendable (BlobID) -> Void) {
        guard waiting.add(1, ordering: .relaxed).newValue <= limit else {
            waiting.subtract(1, ordering: .relaxed)
            leftCount.add(1, ordering: .relaxed)
            return
        }
        queue.async {
            delete(id)
            self.waiting.subtract(1, ordering: .relaxed)
        }
    }

    /// Returns once every deletion queued before the call has run.
    func wait() { queue.sync {} }

    /// Deletions waiting now, and those left to the collector because `limit` were waiting.
    var backlog: (waiting: Int, leftToCollector: Int) {
        (waiting.load(ordering: .relaxed), leftCount.load(ordering: .relaxed))
    }
}
