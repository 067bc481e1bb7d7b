package import SiloCore
import SiloHTTP
import SiloWire

/// One version's metadata exactly: a generation names one version of one object, and any metadata change bumps
/// the metageneration. What is derived from a record alone can be cached under it and never goes stale. (Not the
/// blob id: a store may let versions share a blob.)
struct VersionKey: Hashable, Sendable {
    var bucket: BucketName
    var name: ObjectName
    var generation: Int64
    var metageneration: Int64

    static func bytes(_ key: VersionKey) -> Int { 64 + key.bucket.rawValue.utf8.count + key.name.rawValue.utf8.count }

    /// The generation alone tells versions apart (a microsecond clock, strictly increasing per name): hashing the
    /// bucket and the name as well cost two SipHash passes over strings on every download, for collisions only
    /// between objects written in the same microsecond, which `==` still resolves.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(generation)
        hasher.combine(metageneration)
    }

    init(_ record: ObjectRecord) {
        bucket = record.bucket
        name = record.name
        generation = record.generation
        metageneration = record.metageneration
    }
}

/// What repeated reads of one version send, derived once: download headers, and the v0 metadata JSON.
package final class VersionResponseCache: Sendable {
    private let headers: BoundedCache<VersionKey, DownloadHeaders>
    private let firebaseJSON: BoundedCache<VersionKey, [UInt8]>
    /// Lookups of both parts (a miss derives the value and keeps it).
    let lookups: CacheCounters
    /// False for the view a socket thread uses (``nonWaiting()``): a lock another thread holds is a miss there.
    private let waits: Bool

    /// The same caches, for a thread that must never sleep on their locks.
    func nonWaiting() -> VersionResponseCache {
        VersionResponseCache(headers: headers, firebaseJSON: firebaseJSON, lookups: lookups, waits: false)
    }

    private init(
        headers: BoundedCache<VersionKey, DownloadHeaders>, firebaseJSON: BoundedCache<VersionKey, [UInt8]>,
        lookups: CacheCounters, waits: Bool
    ) {
        (self.headers, self.firebaseJSON, self.lookups, self.waits) = (headers, firebaseJSON, lookups, waits)
    }

    /// - Parameter maxBytes: the budget of each of the two caches.
    init(capacity: Int, maxBytes: Int) {
        lookups = CacheCounters()
        waits = true
        headers = BoundedCache(capacity: capacity, maxBytes: maxBytes) { key, headers in
            // Per API three field lists plus the preformatted bytes of the last, each about the size of those bytes.
            VersionKey.bytes(key) + 4
                * [headers.firebase, headers.gcs, headers.xml].reduce(0) { $0 + ($1.whole.wireFormat?.count ?? 2048) }
        }
        firebaseJSON = BoundedCache(capacity: capacity, maxBytes: maxBytes) { key, json in
            VersionKey.bytes(key) + json.count
        }
    }

    func downloadHeaders(_ record: ObjectRecord) -> DownloadHeaders {
        cached(headers, record) { DownloadHeaders($0) }
    }

    /// The v0 metadata JSON of `record`, serialized.
    package func firebaseMetadata(_ record: ObjectRecord) -> [UInt8] {
        cached(firebaseJSON, record) { FirebaseMetadata.json($0).serialized() }
    }

    private func cached<Value>(
        _ cache: BoundedCache<VersionKey, Value>, _ record: ObjectRecord, _ build: (ObjectRecord) -> Value
    ) -> Value {
        let key = VersionKey(record)
        if let hit = cache.value(for: key, waiting: waits) {
            lookups.hit()
            return hit
        }
        lookups.miss()
        let built = build(record)
        cache.insert(built, for: key, waiting: waits)
        return built
    }
}
