import Foundation
import SiloCore
import SiloImages
import SiloServer
import SiloServerKit

/// `--images FILE`: the thumbnail settings, made with libvips; the result cache defaults to `DIR/thumbnail-cache`,
/// the saved preset jobs to `DIR/preset-jobs` beside it (in the data directory, not under the cache's own setting:
/// the cache may be anywhere, even shared scratch space, while a job belongs to this server's stores).
enum ServeImages {
    static func settings(file: String, dataDirectory: String) throws -> ImageSettings {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw StorageError(.invalidArgument, "cannot read the images file \(file)")
        }
        var settings = try ImageSettings.parse(json: Array(data))
        if settings.cacheDirectory == nil { settings.cacheDirectory = dataDirectory + "/thumbnail-cache" }
        if settings.presetJobDirectory == nil { settings.presetJobDirectory = dataDirectory + "/preset-jobs" }
        settings.transformer = try VipsThumbnailer()
        return settings
    }
}
