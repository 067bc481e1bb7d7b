internal import SiloCore

/// A bucket and an object path, canonicalised. Pure string handling: Foundation's path helpers trap or do not
/// normalise on Linux. The root is the empty object path (Firebase sometimes uses nil and
/// sometimes "", which makes equal-looking references unequal; see docs/compatibility.md).
struct StoragePath: Hashable, Sendable {
    var bucket: String
    var object: String

    init(bucket: String, object: String = "") {
        self.bucket = bucket
        self.object = StoragePath.canonicalize(object)
    }

    /// Collapses repeated `/` and trims leading and trailing `/`. No meaning for `.`/`..`, no decoding.
    static func canonicalize(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    var isRoot: Bool { object.isEmpty }

    func child(_ path: String) -> StoragePath {
        StoragePath(bucket: bucket, object: object + "/" + path)
    }

    func parent() -> StoragePath? {
        guard !object.isEmpty else { return nil }
        guard let slash = object.lastIndex(of: "/") else { return StoragePath(bucket: bucket) }
        return StoragePath(bucket: bucket, object: String(object[..<slash]))
    }

    func root() -> StoragePath { StoragePath(bucket: bucket) }

    var name: String { object.split(separator: "/").last.map(String.init) ?? "" }

    var gsURI: String { "gs://\(bucket)/\(object)" }

    static let schemeMessage = "Internal error: URL scheme must be one of gs://, http://, or https://"
    static let gsMessage = "Internal error: URL must be in the form of gs://<bucket>/<path/to/object>"
    static let httpMessage =
        "Internal error: URL must be in the form of http[s]://<host>/v0/b/<bucket>/o/<path/to/object>[?token=signed_url_params]"

    /// Parses `gs://bucket[/path]` and `http(s)://host/v0/b/bucket[/o[/object]]` (the host is not checked; path
    /// segments are percent-decoded one by one, so `%2F` inside the object segment becomes `/`). Query and
    /// fragment are ignored for http URLs; for `gs://` everything after the bucket is the object, verbatim.
    static func parse(_ string: String) throws(StorageError) -> StoragePath {
        let lower = string.lowercased()
        if lower.hasPrefix("gs://") {
            let rest = string.dropFirst(5)
            let bucketEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            let bucket = String(rest[..<bucketEnd])
            guard !bucket.isEmpty else { throw .pathError(message: gsMessage) }
            let object = bucketEnd < rest.endIndex ? String(rest[rest.index(after: bucketEnd)...]) : ""
            return StoragePath(bucket: bucket, object: object)
        }
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw .pathError(message: schemeMessage)
        }
        let afterScheme = string[string.index(string.startIndex, offsetBy: lower.hasPrefix("https://") ? 8 : 7)...]
        let hostEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        var path = afterScheme[hostEnd...]
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<cut] }
        var segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        // The documented legacy form `/b/<bucket>/o/...` (no `/v0`) is accepted as well; see docs/compatibility.md.
        if segments.first == "v0" { segments.removeFirst() }
        guard segments.count >= 2, segments[0] == "b", !segments[1].isEmpty,
            let bucket = PercentCoding.decodePathComponent(segments[1])
        else { throw .pathError(message: httpMessage) }
        var objectSegments = segments.dropFirst(2)
        if objectSegments.last == "" { objectSegments = objectSegments.dropLast() }
        guard let marker = objectSegments.first else { return StoragePath(bucket: bucket) }
        guard marker == "o" else { throw .pathError(message: httpMessage) }
        var decoded: [String] = []
        for segment in objectSegments.dropFirst() {
            guard let text = PercentCoding.decodePathComponent(segment) else { throw .pathError(message: httpMessage) }
            decoded.append(text)
        }
        return StoragePath(bucket: bucket, object: decoded.joined(separator: "/"))
    }
}
