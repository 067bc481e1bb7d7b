internal import SiloCore

/// The advisory-lock key of an object name: FNV-1a (64-bit) over the schema's, a 0 byte, the bucket's UTF-8, a 0 byte, and the name's UTF-8.
/// Stable across processes and versions (Swift's `Hasher` is seeded per process, so it would not do), so every node
/// computes the same key for the same name.
enum NameLock {
    static func key(_ namespace: String, _ bucket: BucketName, _ name: ObjectName) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        for byte in namespace.utf8 { mix(byte) }
        mix(0)
        for byte in bucket.rawValue.utf8 { mix(byte) }
        mix(0)
        for byte in name.rawValue.utf8 { mix(byte) }
        return Int64(bitPattern: hash)
    }
}
