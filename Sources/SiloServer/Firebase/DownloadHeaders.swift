import SiloCore
import SiloHTTP
import SiloWire

/// The response headers of one object version's downloads, which depend on nothing but the version (and on which
/// API serves it: the GCS JSON API's media downloads also carry the custom metadata as `x-goog-meta-*`, as GCS's
/// do; the v0 API's, which token holders read, do not).
struct DownloadHeaders: Sendable {
    enum API: Sendable {
        case firebase
        case gcs
    }

    /// The header lists of one API's answers.
    struct Variant: Sendable {
        /// Validators, type, disposition and the `X-Goog-*` fields every download carries.
        let base: HTTPHeaders
        /// `base` plus `Content-Encoding` when one is stored: where 206 and 416 answers start.
        let encoded: HTTPHeaders
        /// `encoded` plus `X-Goog-Hash`: a whole-object 200, as sent.
        let whole: HTTPHeaders
    }

    /// The quoted ETag (v0 downloads send it so; the iOS and Android resume logic keeps it as sent).
    let etag: String
    let firebase: Variant
    let gcs: Variant

    func variant(_ api: API) -> Variant { api == .gcs ? gcs : firebase }

    init(_ record: ObjectRecord) {
        // Every name is added once (no `set`, which scans the list).
        var headers = HTTPHeaders(minimumCapacity: 16)
        etag = "\"\(record.etag)\""
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
        var firebaseHeaders = headers
        firebaseHeaders.add("ETag", etag)
        firebase = Self.variant(firebaseHeaders, record)
        // GCS sends the etag bare, and google-cloud-storage compares the header with the resource's `etag`.
        headers.add("ETag", record.etag)
        for (key, value) in record.fields.customMetadata.sorted(by: { $0.key < $1.key }) {
            headers.add("X-Goog-Meta-" + key, value)
        }
        if !record.fields.downloadTokens.isEmpty {
            headers.add(
                "X-Goog-Meta-" + ObjectFields.downloadTokensKey, record.fields.downloadTokens.joined(separator: ","))
        }
        gcs = Self.variant(headers, record)
    }

    private static func variant(_ base: HTTPHeaders, _ record: ObjectRecord) -> Variant {
        var headers = base
        if let encoding = record.fields.contentEncoding { headers.add("Content-Encoding", encoding) }
        let encoded = headers
        // Composed objects have a CRC32C only (as in GCS, whose clients then check that instead of MD5).
        let md5 = record.blob.md5.isEmpty ? "" : ",md5=\(Base64.encode(record.blob.md5))"
        headers.add("X-Goog-Hash", "crc32c=\(Checksums.crc32cBase64(record.blob.crc32c))\(md5)")
        // Sent as it is on every repeated whole-object download: formatted once.
        return Variant(base: base, encoded: encoded, whole: headers.preformatted())
    }
}
