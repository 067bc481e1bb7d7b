public import SiloStorage

/// A thumbnail to ask the server for instead of the original: the `width`, `height`, `fit`, `format` and `quality`
/// query parameters of a media download (docs/images.md). Each distinct transform is cached on its own, beside the
/// original. Values are checked when the transform is made, before anything is sent.
public struct StorageImageTransform: Sendable, Hashable, CustomStringConvertible {
    /// How the image fills `width`×`height`.
    public enum Fit: String, Sendable, Hashable {
        case cover, contain, fill
    }
    /// The encoding the server answers in.
    public enum Format: String, Sendable, Hashable {
        case webp, avif, jpeg, png
    }

    /// Larger sides than this are refused here; the server applies its own, usually smaller, allow-list.
    public static let maxDimension = 16384

    public let width: Int
    public let height: Int
    /// nil leaves it to the server (`cover`).
    public let fit: Fit?
    /// nil leaves it to the server (`webp`).
    public let format: Format?
    /// nil leaves it to the server (80).
    public let quality: Int?

    /// Throws `StorageError.invalidArgument` for a side outside 1…`maxDimension` or a quality outside 1…100. Both
    /// sides are required, as the server requires them (its allow-list is of W×H pairs).
    public init(width: Int, height: Int, fit: Fit? = nil, format: Format? = nil, quality: Int? = nil)
        throws(StorageError)
    {
        for (name, value) in [("width", width), ("height", height)] where !(1...Self.maxDimension).contains(value) {
            throw .invalidArgument(message: "Thumbnail \(name) \(value) is outside 1...\(Self.maxDimension)")
        }
        if let quality, !(1...100).contains(quality) {
            throw .invalidArgument(message: "Thumbnail quality \(quality) is outside 1...100")
        }
        self.width = width
        self.height = height
        self.fit = fit
        self.format = format
        self.quality = quality
    }

    /// The query parameters after `alt=media`, in a fixed order.
    var queryItems: [(String, String)] {
        var items = [("width", String(width)), ("height", String(height))]
        if let fit { items.append(("fit", fit.rawValue)) }
        if let format { items.append(("format", format.rawValue)) }
        if let quality { items.append(("quality", String(quality))) }
        return items
    }

    /// `width=256&height=256&fit=cover`: also the transform's part of a cache key (only digits and the enums'
    /// lower-case names, so it is safe in a file header).
    public var description: String { queryItems.map { "\($0.0)=\($0.1)" }.joined(separator: "&") }
}
