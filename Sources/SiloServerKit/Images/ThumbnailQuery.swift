package import SiloCore
package import SiloHTTP

/// The thumbnail parameters of a media read (`width`, `height`, `fit`, `format`, `quality`), checked against what
/// the bucket allows before the object is looked up.
package enum ThumbnailQuery {
    static let names = ["width", "height", "fit", "format", "quality"]

    /// nil for a plain download (no thumbnail parameter). Throws 400 for a bucket that serves no thumbnails, a size
    /// off its allow-list, a format it does not serve, or a malformed value.
    package static func spec(_ query: QueryParameters, bucket: BucketName, settings: ImageSettings) throws
        -> ThumbnailSpec?
    {
        // One pass over the query (every download asks): not a lookup per parameter name.
        guard query.items.contains(where: { isThumbnailParameter($0.name) }) else { return nil }
        guard let allowed = settings.bucket(bucket), !allowed.sizes.isEmpty else {
            throw StorageError(.invalidArgument, "Bucket \(bucket) serves no thumbnails (width, height, fit, format)")
        }
        guard let widthText = query["width"], let heightText = query["height"] else {
            throw StorageError(.invalidArgument, "a thumbnail needs both width and height")
        }
        guard let width = smallInt(widthText), let height = smallInt(heightText),
            let size = try? ThumbnailSize(width: width, height: height), allowed.sizes.contains(size)
        else {
            let list = allowed.sizes.map(\.description).sorted().joined(separator: ", ")
            throw StorageError(
                .invalidArgument,
                "thumbnail size \(widthText.prefix(8))x\(heightText.prefix(8)) is not one \(bucket) serves (\(list))")
        }
        let fit = try query["fit"].map(ImageSettings.fit) ?? .cover
        let format = try query["format"].map(ImageSettings.format) ?? .webp
        guard allowed.formats.contains(format) else {
            throw StorageError(.invalidArgument, "Bucket \(bucket) serves no \(format.rawValue) thumbnails")
        }
        var quality = ThumbnailSpec.defaultQuality
        if let text = query["quality"] {
            guard let value = smallInt(text) else {
                throw StorageError(.invalidArgument, "thumbnail quality \(text.prefix(8)) is not a number")
            }
            quality = value
        }
        return try ThumbnailSpec(width: width, height: height, fit: fit, format: format, quality: quality)
    }

    /// One of ``names``. Their first letters first: a download's own parameters (`alt`, `token`) differ there, so
    /// they cost a byte comparison instead of five string comparisons.
    private static func isThumbnailParameter(_ name: String) -> Bool {
        switch name.utf8.first {
        case UInt8(ascii: "w"), UInt8(ascii: "h"), UInt8(ascii: "f"), UInt8(ascii: "q"): names.contains(name)
        default: false
        }
    }

    /// Digits only, at most 5 of them.
    private static func smallInt(_ text: String) -> Int? {
        guard (1...5).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}
