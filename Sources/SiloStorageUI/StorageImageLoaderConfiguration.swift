public import Foundation

/// Bounds and timing of a `StorageImageLoader`'s caches.
public struct StorageImageLoaderConfiguration: Sendable {
    /// Bytes the memory cache holds at most; 0 turns it off.
    public var memoryCapacity: Int
    /// Bytes the disk cache's files take at most (their small headers included); 0 turns it off.
    public var diskCapacity: Int
    /// The disk cache's own directory (nothing else should live there); nil turns the disk cache off.
    public var diskDirectory: URL?
    /// How long a cached image is shown without asking the server. After that the next load revalidates it with
    /// `If-None-Match`; a 304 costs no download. A load that names a generation never revalidates: a generation's
    /// bytes never change.
    public var revalidateAfter: TimeInterval
    /// The largest image (or thumbnail) loaded, in bytes; a larger one fails with
    /// `StorageError.downloadSizeExceeded` before its bytes arrive when the server announces its length.
    public var maxImageSize: Int64

    /// `<caches directory>/SiloStorageUI` (on Linux `~/.cache/SiloStorageUI`).
    public static var defaultDiskDirectory: URL? {
        FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first?
            .appendingPathComponent("SiloStorageUI", isDirectory: true)
    }

    public init(
        memoryCapacity: Int = 64 << 20, diskCapacity: Int = 256 << 20,
        diskDirectory: URL? = StorageImageLoaderConfiguration.defaultDiskDirectory,
        revalidateAfter: TimeInterval = 3600, maxImageSize: Int64 = 32 << 20
    ) {
        self.memoryCapacity = memoryCapacity
        self.diskCapacity = diskCapacity
        self.diskDirectory = diskDirectory
        self.revalidateAfter = revalidateAfter
        self.maxImageSize = maxImageSize
    }
}

/// Where a load's bytes came from.
public enum StorageImageSource: Sendable, Hashable {
    /// The memory cache; no request was made.
    case memory
    /// The disk cache; no request was made.
    case disk
    /// A full download.
    case network
    /// A cached copy the server confirmed with a 304 (no body transferred).
    case revalidated
}

/// The bytes of one image and what is known of them.
public struct StorageImageResult: Sendable {
    public let data: Data
    public let source: StorageImageSource
    /// The object generation the bytes are of, when the server named it.
    public let generation: Int64?
    public let contentType: String?
}

/// Where the bytes of an `sd_setImage` completion came from, in SDWebImage's terms (`SDImageCacheType`), so that
/// completions written for FirebaseUI read the same.
public enum StorageImageCacheType: Sendable, Hashable {
    /// Downloaded (or revalidated with the server).
    case none
    case disk
    case memory

    public init(_ source: StorageImageSource) {
        switch source {
        case .memory: self = .memory
        case .disk: self = .disk
        case .network, .revalidated: self = .none
        }
    }
}
