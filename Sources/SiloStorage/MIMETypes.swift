/// File-extension → MIME type for `putFile` when the caller sets no `contentType`. Firebase asks `UTType`, which does
/// not exist on Linux; this table covers the common web, image, audio and video types.
enum MIMETypes {
    static let fallback = "application/octet-stream"

    static func type(forPathExtension ext: String) -> String {
        table[ext.lowercased()] ?? fallback
    }

    private static let table: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
        "csv": "text/csv", "md": "text/markdown", "xml": "application/xml", "js": "text/javascript",
        "json": "application/json", "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip",
        "tar": "application/x-tar", "wasm": "application/wasm",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "heic": "image/heic", "tif": "image/tiff", "tiff": "image/tiff", "bmp": "image/bmp",
        "ico": "image/vnd.microsoft.icon",
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "wav": "audio/wav", "aac": "audio/aac", "ogg": "audio/ogg",
        "flac": "audio/flac",
        "mov": "video/quicktime", "mp4": "video/mp4", "m4v": "video/x-m4v", "webm": "video/webm",
        "avi": "video/x-msvideo",
    ]
}
