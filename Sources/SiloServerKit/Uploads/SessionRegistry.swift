import SiloCore
import SiloHashing
import Synchronization

/// In-process state of resumable sessions: which session has a chunk in flight (one at a time per session), and
/// the running checksums of each session so finalize need not re-read the bytes.
///
/// Both are caches of what the metadata store says: after a restart they are empty, a chunk simply takes the lock
/// again, and finalize re-reads the blob to compute the checksums.
package final class SessionRegistry: Sendable {
    private let busy = Mutex<Set<String>>([])
    private let hashers = Mutex<[String: HasherBox]>([:])
    private let maxCachedHashers = 4096

    /// Claims the session for one chunk; false if another request is writing to it.
    package func tryClaim(_ id: String) -> Bool { busy.withLock { $0.insert(id).inserted } }
    package func release(_ id: String) { _ = busy.withLock { $0.remove(id) } }

    /// Takes the session's running hasher if it has hashed exactly `offset` bytes; nil otherwise.
    func takeHasher(_ id: String, at offset: Int64) -> ObjectHasher? {
        hashers.withLock { map in
            guard let box = map.removeValue(forKey: id), box.hasher.size == offset else { return nil }
            return box.hasher
        }
    }

    func storeHasher(_ hasher: ObjectHasher, for id: String) {
        let box = HasherBox(hasher)
        hashers.withLock { map in
            if map.count >= maxCachedHashers, let victim = map.keys.first { map.removeValue(forKey: victim) }
            map[id] = box
        }
    }

    package func forget(_ id: String) { _ = hashers.withLock { $0.removeValue(forKey: id) } }
}

/// Moves a hasher between requests of one session.
/// `@unchecked Sendable`: the hasher is only ever used by the request that holds the session's claim
/// (``SessionRegistry/tryClaim(_:)``), and is handed over through the registry's mutex.
private final class HasherBox: @unchecked Sendable {
    let hasher: ObjectHasher
    init(_ hasher: ObjectHasher) { self.hasher = hasher }
}
