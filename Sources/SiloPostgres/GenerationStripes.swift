import SiloCore

/// Which generation counter row a name uses (migration 11 makes `count` of them, `generation/0`…). The hash is
/// FNV-1a over the bucket and name bytes: the same on every node, architecture and version, because a name that
/// moved to another row could be handed a generation it already had.
enum GenerationStripes {
    static let count = 16

    static func counter(_ bucket: BucketName, _ name: ObjectName) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix(_ byte: UInt8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        for byte in bucket.rawValue.utf8 { mix(byte) }
        mix(0)
        for byte in name.rawValue.utf8 { mix(byte) }
        return "generation/\(hash % UInt64(count))"
    }
}
