/// What a thumbnail is made to: a box, how the image fills it, the encoding and its quality. Values are checked
/// where they enter (``ThumbnailSpec/init(width:height:fit:format:quality:)``).
public struct ThumbnailSpec: Sendable, Hashable, CustomStringConvertible {
    public enum Fit: String, Sendable, CaseIterable {
        /// Scaled to cover the box, then cropped to it (centre): exactly width × height.
        case cover
        /// Scaled to fit inside the box, aspect ratio kept: one side may be shorter.
        case contain
        /// Stretched to the box: exactly width × height, aspect ratio not kept.
        case fill
    }

    public enum Format: String, Sendable, CaseIterable {
        case webp, avif, jpeg, png

        public var contentType: String {
            switch self {
            case .webp: "image/webp"
            case .avif: "image/avif"
            case .jpeg: "image/jpeg"
            case .png: "image/png"
            }
        }

        /// The file name extension preset thumbnails are written with.
        public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }
    }

    /// The largest box side and the quality range anyone may ask for; servers narrow sizes further (allow-lists).
    public static let maxSide = 4096
    public static let qualities = 1...100
    public static let defaultQuality = 80

    public let width: Int
    public let height: Int
    public let fit: Fit
    public let format: Format
    public let quality: Int

    public init(width: Int, height: Int, fit: Fit = .cover, format: Format = .webp, quality: Int = defaultQuality)
        throws
    {
        guard (1...Self.maxSide).contains(width), (1...Self.maxSide).contains(height) else {
            throw StorageError(
                .invalidArgument, "thumbnail size \(width)x\(height) is outside 1...\(Self.maxSide) on a side")
        }
        guard Self.qualities.contains(quality) else {
            throw StorageError(.invalidArgument, "thumbnail quality \(quality) is outside 1...100")
        }
        self.width = width
        self.height = height
        self.fit = fit
        self.format = format
        self.quality = quality
    }

    /// Stable across releases: cache keys and ETags are derived from it.
    public var description: String { "\(width)x\(height)-\(fit.rawValue)-q\(quality).\(format.rawValue)" }
}

/// Where a transform reads the original from: a local file's descriptor (read in place, never copied), or bytes
/// already in memory (a blob store without local files; the caller bounds their size).
public enum ImageSource: Sendable {
    /// The transformer reads it and does not close it.
    case fileDescriptor(Int32)
    case bytes([UInt8])
}

/// The bounds of one transform: checked on the header before any pixel is decoded, and while it runs.
public struct ImageLimits: Sendable {
    /// Larger originals (width × height as their header declares) are refused with `.invalidArgument`: a small
    /// file can declare a huge image (a decompression bomb). 40 MP by default: room for a 12 MP photo three times.
    public var maxInputPixels = 40_000_000
    /// A transform still running after this long is stopped and answers `.unavailable`.
    public var maxSeconds: Double = 10
    /// The memory one transform may take, as estimated from the header before decoding (libvips' model is in
    /// SiloImages' `DecodeMemory`); larger ones are refused with `.invalidArgument`. With at most
    /// `maxConcurrentTransforms` at once, the server's image memory stays under their product. 256 MiB by default:
    /// a 12 MP photo in every format (HEIF, the costliest, about 128 MiB) and a 40 MP JPEG or PNG.
    public var maxDecodeBytes: Int64 = 256 << 20

    public init() {}
}

/// What a decoded header says.
public struct ImageHeader: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// The most memory a thumbnail of it takes (``ImageLimits/maxDecodeBytes``); 0 when not known.
    public var decodeBytes: Int64

    public init(width: Int, height: Int, decodeBytes: Int64 = 0) {
        self.width = width
        self.height = height
        self.decodeBytes = decodeBytes
    }
}

/// Makes thumbnails. Implementations are thread-safe and do CPU work on the caller's thread: callers run them on
/// workers, never on an event loop.
public protocol ImageTransformer: Sendable {
    /// Reads only the header of `source`. Throws `.invalidArgument` for bytes that are no image it decodes.
    func header(of source: ImageSource) throws -> ImageHeader
    /// The encoded thumbnail. Throws `.invalidArgument` for an undecodable original or one over
    /// `limits.maxInputPixels` (checked before decoding), `.unavailable` past `limits.maxSeconds`.
    func thumbnail(of source: ImageSource, _ spec: ThumbnailSpec, limits: ImageLimits) throws -> [UInt8]
}
