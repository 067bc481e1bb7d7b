import SiloCore
import SiloHTTP
import SiloWire

/// The response headers of one object version's downloads, which depend on nothing but the version.
struct DownloadHeaders: Sendable {
    /// The quoted ETag, for `If-None-Match`.
    let etag: String
    /// Validators, type, disposition and the `X-Goog-*` fields every download carries.
    let base: HTTPHeaders
    /// `base` plus `Content-Encoding` when one is stored: where 206 and 416 answers start.
    let encoded: HTTPHeaders
    /// `encoded` plus `X-Goog-Hash`: a whole-object 200, as sent.
    let whole: HTTPHeaders

    init(_ record: ObjectRecord) {
        // Every name is added once (no `set`, which scans the list).
        var headers = HTTPHeaders(minimumCapacity: 16)
        etag = "\"\(record.etag)\""
        headers.add("ETag", etag)
        headers.add("Last-Modified", record.updated.rfc1123)
        headers.add("Accept-Ranges", "bytes")
        headers.add("Content-Type", record.fields.contentType ?? "application/octet-stream")
        headers.add("Content-Disposition", DownloadResponder.contentDisposition(record))
        if let cacheControl = record.fields.cacheControl { headers.add("Cache-Control", cacheControl) }
        if let language = record.fields.contentLanguage { headers.add("Content-Language", language) }
        headers.add("X-Goog-Generation", String(record.generation))
        headers.add("X-Goog-Metageneration", String(record.metageneration))
        headers.add("X-Goog-Storage-Class", "STANDARD")
        headers.add("X-Goog-Stored-Content-Encoding", record.fields.contentEncoding ?? "identity")
        headers.add("X-Goog-Stored-Content-Length", String(record.size))
        base = headers
        if let encoding = record.fields.contentEncoding { headers.add("Content-Encoding", encoding) }
        encoded = headers
        headers.add(
            "X-Goog-Hash", "crc32c=\(Checksums.crc32cBase64(record.blob.crc32c)),md5=\(Base64.encode(record.blob.md5))")
        // Sent as it is on every repeated whole-object download: formatted once.
        whole = headers.preformatted()
    }
}
