/// What one bucket holds, kept by the store in the transactions that change it (never by scanning): live versions
/// and noncurrent versions (versioned buckets) apart; soft-deleted versions are in neither.
public struct BucketUsage: Sendable, Equatable {
    public var objects: Int64
    public var bytes: Int64
    public var noncurrentObjects: Int64
    public var noncurrentBytes: Int64

    public init(objects: Int64 = 0, bytes: Int64 = 0, noncurrentObjects: Int64 = 0, noncurrentBytes: Int64 = 0) {
        self.objects = objects
        self.bytes = bytes
        self.noncurrentObjects = noncurrentObjects
        self.noncurrentBytes = noncurrentBytes
    }

    public static let zero = BucketUsage()

    public var isZero: Bool { self == .zero }

    public static func + (a: BucketUsage, b: BucketUsage) -> BucketUsage {
        BucketUsage(
            objects: a.objects + b.objects, bytes: a.bytes + b.bytes,
            noncurrentObjects: a.noncurrentObjects + b.noncurrentObjects,
            noncurrentBytes: a.noncurrentBytes + b.noncurrentBytes)
    }

    public static func += (a: inout BucketUsage, b: BucketUsage) { a = a + b }

    /// One live version of `record`'s size, counted in (`sign` 1) or out (-1).
    public static func live(_ record: ObjectRecord, _ sign: Int64 = 1) -> BucketUsage {
        BucketUsage(objects: sign, bytes: sign * record.size)
    }

    public static func noncurrent(_ record: ObjectRecord, _ sign: Int64 = 1) -> BucketUsage {
        BucketUsage(noncurrentObjects: sign, noncurrentBytes: sign * record.size)
    }
}
