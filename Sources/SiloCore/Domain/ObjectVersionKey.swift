/// A position in a listing of every object version: versions order by name bytes, then generation ascending.
///
/// It is what a versions listing's page token encodes, so it is raw bytes rather than an ``ObjectName``: a token
/// from a client is decoded before anyone checks that the name is valid.
public struct ObjectVersionKey: Sendable, Hashable, Comparable {
    public var name: [UInt8]
    public var generation: Int64

    public init(name: [UInt8], generation: Int64) {
        self.name = name
        self.generation = generation
    }

    /// The key of a stored version.
    public init(_ record: ObjectRecord) {
        self.init(name: Array(record.name.rawValue.utf8), generation: record.generation)
    }

    /// Name bytes, one 0x00, then the generation as 8 big-endian bytes. Object names never contain NUL, so the
    /// separator is unambiguous.
    public var bytes: [UInt8] {
        var out = name
        out.reserveCapacity(name.count + 9)
        out.append(0)
        let bits = UInt64(bitPattern: generation)
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        return out
    }

    /// Decodes `bytes`; nil unless it is exactly what ``bytes`` produces (one NUL, right before the generation).
    public init?(bytes: some Collection<UInt8>) {
        let all = Array(bytes)
        guard all.count >= 9, all[all.count - 9] == 0 else { return nil }
        let name = all[..<(all.count - 9)]
        guard !name.contains(0) else { return nil }
        var bits: UInt64 = 0
        for byte in all[(all.count - 8)...] { bits = bits << 8 | UInt64(byte) }
        self.init(name: Array(name), generation: Int64(bitPattern: bits))
    }

    public static func < (a: ObjectVersionKey, b: ObjectVersionKey) -> Bool {
        if a.name != b.name { return a.name.lexicographicallyPrecedes(b.name) }
        return a.generation < b.generation
    }
}
