/// `gs://bucket/path`: a bucket and an object name or prefix ("" for the bucket root).
struct ObjectAddress: Sendable, Equatable, CustomStringConvertible {
    var bucket: String
    var path: String

    static func isRemote(_ text: String) -> Bool { text.lowercased().hasPrefix("gs://") }

    /// Parses `gs://bucket[/path]`; a usage error otherwise.
    init(parsing text: String) throws {
        guard ObjectAddress.isRemote(text) else {
            throw ValidationError("'\(text)' is not a gs://bucket/path address")
        }
        let rest = text.dropFirst(5)
        let slash = rest.firstIndex(of: "/")
        bucket = String(rest[..<(slash ?? rest.endIndex)])
        path = slash.map { String(rest[rest.index(after: $0)...]) } ?? ""
        guard !bucket.isEmpty else { throw ValidationError("'\(text)' names no bucket") }
    }

    init(bucket: String, path: String) {
        self.bucket = bucket
        self.path = path
    }

    var description: String { "gs://\(bucket)/\(path)" }
    var isBucketRoot: Bool { path.isEmpty }
    /// Ends with `/` or is the bucket root: a folder to copy into.
    var isFolder: Bool { path.isEmpty || path.hasSuffix("/") }
    /// The path as a listing prefix: "" or ending in `/`.
    var folderPrefix: String { path.isEmpty || path.hasSuffix("/") ? path : path + "/" }
    var lastComponent: String { path.split(separator: "/").last.map(String.init) ?? "" }

    /// The address of `relative` under this folder.
    func appending(_ relative: String) -> ObjectAddress { ObjectAddress(bucket: bucket, path: folderPrefix + relative) }
}
