package import SiloCore
import SiloHTTP
import SiloWire

/// The response headers of one object version's downloads, which depend on nothing but the version (and on which
/// API serves it: the GCS JSON API's media downloads also carry the custom metadata as `x-goog-meta-*`, as GCS's
/// do; the v0 API's, which token holders read, do not; the XML API's name the version by its MD5, as GCS's do).
///
/// Immutable classes, not structs: every download takes these out of ``VersionResponseCache``, and a struct of
/// three variants of four header lists was some twenty retains and releases per copy (callgrind,
/// `bench/instructions.sh get`); a class is one.
package final class DownloadHeaders: Sendable {
    package enum API: Sendable {
        case firebase
        case gcs
        case xml
    }

    /// The header lists of one API's answers.
    final class Variant: Sendable {
        /// The quoted ETag that `If-Match` and `If-None-Match` are compared with.
        let etag: String
        /// Validators, type, disposition and the `X-Goog-*` fields every download carries.
        let base: HTTPHeaders
        /// `base` plus `Content-Encoding` when one is stored: where 206 and 416 answers start.
        let encoded: HTTPHeaders
        /// `encoded` plus `X-Goog-Hash`: a whole-object 200, as sent.
        let whole: HTTPHeaders

        init(etag: String, base: HTTPHeaders, encoded: HTTPHeaders, whole: HTTPHeaders) {
            self.etag = etag
            self.base = base
            self.encoded = encoded
            self.whole = whole
        }
    }

    let firebase: Variant
    let gcs: Variant
    let xml: Variant

    func variant(_ api: API) -> Variant {
        switch api {
        case .firebase: firebase
        case .gcs: gcs
        case .xml: xml
        }
    }

    init(_ record: ObjectRecord) {
        // The quoted ETag (v0 downloads send it so; the iOS and Android resume logic keeps it as sent).
        let etag = "\"\(record.etag)\""
        let invented = DownloadResponder.contentDisposition(record)
        firebase = Self.variant(
            Self.common(record, etag: etag, disposition: invented, storageClass: "STANDARD"), record, etag: etag)
        // GCS sends the etag bare, and google-cloud-storage compares the header with the resource's `etag`.
        var gcsHeaders = Self.common(record, etag: record.etag, disposition: invented, storageClass: "STANDARD")
        Self.addCustomMetadata(record, to: &gcsHeaders)
        gcs = Self.variant(gcsHeaders, record, etag: etag)
        // The XML API sends only the disposition that is stored, and the object's own storage class.
        let xmlETag = XMLETag.of(record)
        var xmlHeaders = Self.common(
            record, etag: xmlETag, disposition: record.fields.contentDisposition,
            storageClass: record.fields.extras.storageClass ?? "STANDARD")
        Self.addCustomMetadata(record, to: &xmlHeaders)
        xml = Self.variant(xmlHeaders, record, etag: xmlETag)
    }

    /// Every name is added once (no `set`, which scans the list).
    private static func common(_ record: ObjectRecord, etag: String, disposition: String?, storageClass: String)
        -> HTTPHeaders
    {
        var headers = HTTPHeaders(minimumCapacity: 16)
        // First, and formatted once with the rest: the pipeline's check of every answer
        // (``ContentIsolation/ensure(_:)``) then finds both in the first two fields instead of after a dozen.
        ContentIsolation.add(to: &headers)
        headers.add("Last-Modified", record.updated.rfc1123)
        headers.add("Accept-Ranges", "bytes")
        headers.add("Content-Type", record.fields.contentType ?? "application/octet-stream")
        if let disposition { headers.add("Content-Disposition", disposition) }
        if let cacheControl = record.fields.cacheControl { headers.add("Cache-Control", cacheControl) }
        if let language = record.fields.contentLanguage { headers.add("Content-Language", language) }
        headers.add("X-Goog-Generation", String(record.generation))
        headers.add("X-Goog-Metageneration", String(record.metageneration))
        headers.add("X-Goog-Storage-Class", storageClass)
        headers.add("X-Goog-Stored-Content-Encoding", record.fields.contentEncoding ?? "identity")
        headers.add("X-Goog-Stored-Content-Length", String(record.size))
        headers.add("ETag", etag)
        return headers
    }

    private static func addCustomMetadata(_ record: ObjectRecord, to headers: inout HTTPHeaders) {
        for (key, value) in record.fields.customMetadata.sorted(by: { $0.key < $1.key }) {
            headers.add("X-Goog-Meta-" + key, value)
        }
        if !record.fields.downloadTokens.isEmpty {
            headers.add(
                "X-Goog-Meta-" + ObjectFields.downloadTokensKey, record.fields.downloadTokens.joined(separator: ","))
        }
    }

    private static func variant(_ base: HTTPHeaders, _ record: ObjectRecord, etag: String) -> Variant {
        var headers = base
        if let encoding = record.fields.contentEncoding { headers.add("Content-Encoding", encoding) }
        let encoded = headers
        headers.add("X-Goog-Hash", hash(record.blob))
        // Sent as it is on every repeated whole-object download: formatted once.
        return Variant(etag: etag, base: base, encoded: encoded, whole: headers.preformatted())
    }

    /// `crc32c=…,md5=…` (base64), as GCS's `X-Goog-Hash`; a composed object has a CRC32C only (as in GCS, whose
    /// clients then check that instead of the MD5).
    package static func hash(_ blob: BlobSummary) -> String {
        let crc32c = "crc32c=\(Checksums.crc32cBase64(blob.crc32c))"
        return blob.md5.isEmpty ? crc32c : crc32c + ",md5=\(Base64.encode(blob.md5))"
    }
}

/// The XML API's ETag, which every download path sends for an XML read.
package enum XMLETag {
    /// The XML API's ETag: the quoted MD5 of the bytes in hex, as GCS sends it (and as S3 clients expect). A composed
    /// object has no MD5: its ETag is the JSON API's etag, quoted (GCS's are not MD5-based either).
    package static func of(_ record: ObjectRecord) -> String {
        record.blob.md5.isEmpty ? "\"\(record.etag)\"" : "\"" + Base16.encode(record.blob.md5) + "\""
    }
}
