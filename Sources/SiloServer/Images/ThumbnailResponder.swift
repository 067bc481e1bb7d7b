import SiloCore
import SiloHTTP

/// Answers a media read that asks for a thumbnail, after the route has authorized the read of the original exactly
/// as a download: its own type and validators, conditional requests, caching headers.
struct ThumbnailResponder {
    let service: ObjectService

    /// What a thumbnail is cached for when the object names no `Cache-Control`: private (it was authorized per
    /// caller), an hour.
    static let defaultCacheControl = "private, max-age=3600"

    func respond(_ record: ObjectRecord, _ spec: ThumbnailSpec, request: HTTPRequestHead) throws -> HTTPResponse {
        try CustomerEncryption.checkRead(record, request.headers)
        // A result in memory answers with headers formatted when it was made: on the event loop too.
        if let hot = service.images.memoryHit(record, spec) {
            if let early = try Self.conditional(request, etag: hot.etag, record, headers: hot.headers) { return early }
            return HTTPResponse(status: 200, headers: hot.headers, body: .bytes(hot.bytes))
        }
        // Derived from the version and the parameters: the same bytes for as long as both are the same.
        let etag = "\"\(record.generation)-\(spec)\""
        var headers = HTTPHeaders(minimumCapacity: 8)
        headers.add("Content-Type", spec.format.contentType)
        headers.add("ETag", etag)
        headers.add("Last-Modified", record.updated.rfc1123)
        headers.add("Cache-Control", record.fields.cacheControl ?? Self.defaultCacheControl)
        headers.add("X-Goog-Generation", String(record.generation))
        if let early = try Self.conditional(request, etag: etag, record, headers: headers) { return early }
        // On the event loop (an inline attempt) nothing else is served: a disk read or a transform goes to a worker.
        if InlineAttempt.current != nil { throw InlineAttempt.wouldBlock("a thumbnail not in memory") }
        var hit = headers
        hit.add("X-Silo-Thumbnail-Cache", "hit")
        let formatted = hit.preformatted()
        let made = try service.images.thumbnail(record, spec, blobs: service.blobs) { bytes in
            ImageService.Hot(bytes: bytes, etag: etag, headers: formatted, metageneration: record.metageneration)
        }
        headers.add("X-Silo-Thumbnail-Cache", made.cached ? "hit" : "miss")
        return HTTPResponse(status: 200, headers: headers, body: .bytes(made.bytes))
    }

    /// 304 for a matching `If-None-Match` (or a held `If-Modified-Since`), 412 for a failed `If-Match`; nil to go on.
    private static func conditional(
        _ request: HTTPRequestHead, etag: String, _ record: ObjectRecord, headers: HTTPHeaders
    )
        throws -> HTTPResponse?
    {
        switch ValidatorConditions(request.headers).evaluate(etag: etag, modified: record.updated) {
        case .proceed: return nil
        case .notModified: return HTTPResponse(status: 304, headers: headers)
        case .failed:
            throw StorageError(
                .preconditionFailed, "If-Match or If-Unmodified-Since does not hold for \(record.bucket)/\(record.name)"
            )
        }
    }
}
