import Foundation
import SiloCore
import SiloImages
import SiloServer

/// `--images FILE`: the thumbnail settings, made with libvips; the result cache defaults to `DIR/thumbnail-cache`.
enum ServeImages {
    static func settings(file: String, dataDirectory: String) throws -> ImageSettings {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw StorageError(.invalidArgument, "cannot read the images file \(file)")
        }
        var settings = try ImageSettings.parse(json: Array(data))
        if settings.cacheDirectory == nil { settings.cacheDirectory = dataDirectory + "/thumbnail-cache" }
        settings.transformer = try VipsThumbnailer()
        return settings
    }
}
