public import SiloCore
import SiloWire

/// Thumbnails: which buckets serve them, at which sizes, the presets written on upload, and the bounds of every
/// transform. Off unless a transformer is set and a bucket is listed (`silo serve --images FILE`; docs/images.md).
public struct ImageSettings: Sendable {
    /// What makes thumbnails (libvips in `silo serve`); nil: no bucket serves any.
    public var transformer: (any ImageTransformer)?
    /// The buckets that serve thumbnails; any other bucket answers 400 to thumbnail parameters.
    public var buckets: [BucketName: BucketImages] = [:]
    public var limits = ImageLimits()
    /// Originals on a blob store without local files are read into memory for a transform: at most this many
    /// bytes (larger ones are refused with 400). Local files are read in place.
    public var maxInputBytes: Int64 = 64 << 20
    /// Transforms running at once, across on-demand requests and presets; a request that finds them all busy waits
    /// up to `queueSeconds`, then answers 503.
    public var maxConcurrentTransforms = 2
    public var queueSeconds: Double = 10
    /// Where transformed results are kept (emptied at startup); nil keeps none.
    public var cacheDirectory: String?
    /// The cache's bound in bytes: the least recently used results are deleted beyond it.
    public var cacheBytes: Int64 = 256 << 20
    /// The most recently served results also kept in memory (served on the event loop); only with the disk cache.
    public var memoryCacheBytes = 16 << 20
    /// Preset jobs waiting to run (queued by this run or left by the one before); an upload beyond it gets no
    /// thumbnails (logged and counted).
    public var maxPendingPresetJobs = 256
    /// Where each waiting preset job is saved, so that it runs after a stop or a crash too; nil keeps them in memory
    /// only.
    public var presetJobDirectory: String?

    public init() {}

    /// What `bucket` allows; nil when it serves no thumbnails.
    package func bucket(_ bucket: BucketName) -> BucketImages? { transformer == nil ? nil : buckets[bucket] }
}

/// One bucket's thumbnail settings.
public struct BucketImages: Sendable {
    /// The sizes on-demand requests may ask for (an allow-list: no unlimited transforms). Empty: none, only presets.
    public var sizes: Set<ThumbnailSize>
    /// The formats they may ask for.
    public var formats: Set<ThumbnailSpec.Format>
    public var presets: [ThumbnailPreset]

    public init(
        sizes: Set<ThumbnailSize>, formats: Set<ThumbnailSpec.Format> = Set(ThumbnailSpec.Format.allCases),
        presets: [ThumbnailPreset] = []
    ) {
        self.sizes = sizes
        self.formats = formats
        self.presets = presets
    }
}

public struct ThumbnailSize: Sendable, Hashable, CustomStringConvertible {
    public let width: Int
    public let height: Int

    public init(width: Int, height: Int) throws {
        guard (1...ThumbnailSpec.maxSide).contains(width), (1...ThumbnailSpec.maxSide).contains(height) else {
            throw StorageError(.invalidArgument, "size \(width)x\(height) is outside 1...\(ThumbnailSpec.maxSide)")
        }
        self.width = width
        self.height = height
    }

    /// `WxH`.
    public init(_ text: String) throws {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]) else {
            throw StorageError(.invalidArgument, "size \(text.prefix(40)) is not WIDTHxHEIGHT")
        }
        try self.init(width: width, height: height)
    }

    public var description: String { "\(width)x\(height)" }
}

/// Thumbnails written beside every image uploaded under `pattern`, as the Resize Images extension does:
/// `{dir}/thumbnails/{name}_{W}x{H}.{ext}`, each with its own download token.
public struct ThumbnailPreset: Sendable {
    /// A `matchGlob` pattern over object names (`*` within a segment, `**` across).
    public let pattern: String
    package let glob: Glob
    public var sizes: [ThumbnailSize]
    public var fit: ThumbnailSpec.Fit
    /// nil: the original's format when it is one of the four, else WebP.
    public var format: ThumbnailSpec.Format?
    public var quality: Int
    /// Delete the original once every thumbnail is written.
    public var deleteOriginal: Bool

    public init(
        pattern: String, sizes: [ThumbnailSize], fit: ThumbnailSpec.Fit = .contain,
        format: ThumbnailSpec.Format? = nil, quality: Int = ThumbnailSpec.defaultQuality, deleteOriginal: Bool = false
    ) throws {
        do { glob = try Glob(pattern) } catch {
            throw StorageError(.invalidArgument, "preset pattern \(pattern.prefix(100)) is not a valid glob")
        }
        guard !sizes.isEmpty, sizes.count <= 16 else {
            throw StorageError(.invalidArgument, "a preset lists 1 to 16 sizes, not \(sizes.count)")
        }
        self.pattern = pattern
        self.sizes = sizes
        self.fit = fit
        self.format = format
        self.quality = quality
        self.deleteOriginal = deleteOriginal
    }
}

extension ImageSettings {
    /// Reads the settings file of `silo serve --images` (docs/images.md shows its shape). The transformer is the
    /// caller's to set.
    public static func parse(json bytes: [UInt8]) throws -> ImageSettings {
        guard bytes.count <= 1 << 20 else { throw StorageError(.invalidArgument, "the images file is over 1 MiB") }
        let root: JSONObject
        do {
            guard let object = try JSONValue.parse(bytes).objectValue else {
                throw StorageError(.invalidArgument, "the images file is not a JSON object")
            }
            root = object
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.invalidArgument, "the images file is not valid JSON", cause: error)
        }
        var settings = ImageSettings()
        if let value = root["maxInputPixels"] { settings.limits.maxInputPixels = try int(value, "maxInputPixels") }
        if let value = root["maxDecodeBytes"] {
            settings.limits.maxDecodeBytes = Int64(try int(value, "maxDecodeBytes"))
        }
        if let value = root["maxSeconds"] { settings.limits.maxSeconds = Double(try int(value, "maxSeconds")) }
        if let value = root["maxInputBytes"] { settings.maxInputBytes = Int64(try int(value, "maxInputBytes")) }
        if let value = root["maxConcurrentTransforms"] {
            settings.maxConcurrentTransforms = try int(value, "maxConcurrentTransforms")
        }
        if let value = root["cacheDirectory"] { settings.cacheDirectory = try string(value, "cacheDirectory") }
        if let value = root["presetJobDirectory"] {
            settings.presetJobDirectory = try string(value, "presetJobDirectory")
        }
        if let value = root["cacheBytes"] { settings.cacheBytes = Int64(try int(value, "cacheBytes")) }
        if let value = root["memoryCacheBytes"] { settings.memoryCacheBytes = try int(value, "memoryCacheBytes") }
        for member in root["buckets"]?.objectValue?.members ?? [] {
            let bucket = try BucketName(member.key)
            guard let object = member.value.objectValue else {
                throw StorageError(.invalidArgument, "images.buckets.\(bucket) is not an object")
            }
            let sizes = try (object["sizes"]?.arrayValue ?? []).map { try ThumbnailSize(try string($0, "sizes")) }
            var formats = Set(ThumbnailSpec.Format.allCases)
            if let list = object["formats"]?.arrayValue {
                formats = Set(try list.map { try format(try string($0, "formats")) })
            }
            let presets = try (object["presets"]?.arrayValue ?? []).map { value -> ThumbnailPreset in
                guard let preset = value.objectValue, let pattern = preset["path"]?.stringValue else {
                    throw StorageError(.invalidArgument, "a preset of \(bucket) needs a \"path\" pattern")
                }
                return try ThumbnailPreset(
                    pattern: pattern,
                    sizes: try (preset["sizes"]?.arrayValue ?? []).map { try ThumbnailSize(try string($0, "sizes")) },
                    fit: try preset["fit"].map { try fit(try string($0, "fit")) } ?? .contain,
                    format: try preset["format"].map { try format(try string($0, "format")) },
                    quality: try preset["quality"].map { try int($0, "quality") } ?? ThumbnailSpec.defaultQuality,
                    deleteOriginal: preset["deleteOriginal"] == .bool(true))
            }
            settings.buckets[bucket] = BucketImages(sizes: Set(sizes), formats: formats, presets: presets)
        }
        guard settings.maxConcurrentTransforms >= 1, settings.limits.maxInputPixels >= 1,
            settings.limits.maxSeconds > 0, settings.limits.maxDecodeBytes >= 1, settings.maxInputBytes >= 1,
            settings.cacheBytes >= 0,
            settings.memoryCacheBytes >= 0
        else { throw StorageError(.invalidArgument, "the images file has a limit below its minimum") }
        return settings
    }

    private static func int(_ value: JSONValue, _ key: String) throws -> Int {
        guard let number = value.int64Value, let int = Int(exactly: number) else {
            throw StorageError(.invalidArgument, "images: \(key) is not an integer")
        }
        return int
    }

    private static func string(_ value: JSONValue, _ key: String) throws -> String {
        guard let text = value.stringValue else {
            throw StorageError(.invalidArgument, "images: \(key) is not a string")
        }
        return text
    }

    static func format(_ text: String) throws -> ThumbnailSpec.Format {
        guard let format = ThumbnailSpec.Format(rawValue: text.lowercased() == "jpg" ? "jpeg" : text.lowercased())
        else { throw StorageError(.invalidArgument, "format \(text.prefix(20)) is not webp, avif, jpeg or png") }
        return format
    }

    static func fit(_ text: String) throws -> ThumbnailSpec.Fit {
        guard let fit = ThumbnailSpec.Fit(rawValue: text) else {
            throw StorageError(.invalidArgument, "fit \(text.prefix(20)) is not cover, contain or fill")
        }
        return fit
    }
}

extension ThumbnailPreset {
    /// `a/b/cat.jpg` → `a/b/thumbnails/cat_200x200.webp`.
    public static func thumbnailName(_ original: ObjectName, _ size: ThumbnailSize, _ format: ThumbnailSpec.Format)
        throws
        -> ObjectName
    {
        let raw = original.rawValue
        let slash = raw.lastIndex(of: "/")
        let directory = slash.map { String(raw[...$0]) } ?? ""
        let file = slash.map { String(raw[raw.index(after: $0)...]) } ?? raw
        let stem = file.lastIndex(of: ".").map { $0 == file.startIndex ? file : String(file[..<$0]) } ?? file
        return try ObjectName(directory + "thumbnails/" + stem + "_\(size)." + format.fileExtension)
    }

}
