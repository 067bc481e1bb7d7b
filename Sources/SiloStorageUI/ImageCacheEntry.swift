import Foundation

/// What the caches are keyed by: one object (bucket and path) as original or as one thumbnail transform. The
/// generation is the other half of the key: an entry holds exactly one generation, a load that names a generation
/// matches only an entry of that generation, and a response for a newer generation replaces the entry, so an
/// overwritten object's old bytes are never served for the new generation.
struct ImageCacheKey: Sendable, Hashable, Codable {
    var bucket: String
    var path: String
    /// `StorageImageTransform.description`, or "" for the original.
    var variant: String

    /// A stable 64-bit FNV-1a of the three parts, for file names. Collisions cost a miss, never wrong bytes: a disk
    /// entry's header holds its full key, compared on every read.
    var fileStem: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in [bucket, path, variant] {
            for byte in part.utf8 + [0] {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// One cached response: the bytes of one generation and the validators to revalidate them with.
struct ImageCacheEntry: Sendable {
    var key: ImageCacheKey
    var generation: Int64?
    /// As the server sent it (quoted), for `If-None-Match`.
    var etag: String?
    var contentType: String?
    /// When the server last confirmed these bytes (a 200 or a 304), wall-clock so it survives restarts.
    var validatedAt: Date
    var data: Data

    /// Whether a load may use this entry without asking the server: the generation matches when one is named (a
    /// generation's bytes never change, so then it is fresh at any age), otherwise the entry is younger than
    /// `maxAge`.
    func isFresh(generation wanted: Int64?, maxAge: TimeInterval, now: Date) -> Bool {
        if let wanted { return wanted == generation }
        return now.timeIntervalSince(validatedAt) < maxAge
    }

    /// Whether the entry may be revalidated for a load that names `wanted`: a different named generation is a miss.
    func matches(generation wanted: Int64?) -> Bool { wanted == nil || wanted == generation }
}
