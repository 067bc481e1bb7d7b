import SiloCore
import SiloHashing
import SiloServerKit

/// The web console's files (console/), served under `/console/`: embedded in the binary at build time
/// (Plugins/EmbedFiles), so `silo serve` answers /console from any working directory with no bundle beside it.
enum ConsoleAssets {
    static let files: [String: ConsoleAsset] = EmbeddedConsole.files.reduce(into: [:]) { files, file in
        guard let type = contentTypes[String(file.key.split(separator: ".").last ?? "")] else { return }
        files[file.key] = ConsoleAsset(contentType: type, etag: etag(file.value), text: file.value)
    }

    /// What each kind of console file is served as (the plugin embeds these kinds only).
    static let contentTypes = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "svg": "image/svg+xml",
    ]

    /// A strong validator of a file's bytes: a prefix of their SHA-256, quoted.
    static func etag(_ text: String) -> String {
        "\"" + Base16.encode(SHA256.digest(text.utf8).prefix(10)) + "\""
    }
}
