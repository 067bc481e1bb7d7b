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
        // Derived from the version and the parameters: the same bytes for as long as both are the same.
        let etag = "\"\(record.generation)-\(spec)\""
        var headers = HTTPHeaders(minimumCapacity: 8)
        headers.add("Content-Type", spec.format.contentType)
        headers.add("ETag", etag)
        headers.add("Last-Modified", record.updated.rfc1123)
        headers.add("Cache-Control", record.fields.cacheControl ?? Self.defaultCacheControl)
        headers.add("X-Goog-Generation", String(record.generation))
        switch ValidatorConditions(request.headers).evaluate(etag: etag, modified: record.updated) {
        case .proceed: break
        case .notModified: return HTTPResponse(status: 304, headers: headers)
        case .failed:
            throw StorageError(
                .preconditionFailed, "If-Match or If-Unmodified-Since does not hold for \(record.bucket)/\(record.name)"
            )
        }
        // On the event loop (an inline attempt) only a result in memory is served; anything else, a transform
        // above all, goes to a worker.
        if InlineAttempt.current != nil {
            guard let bytes = service.images.memoryHit(record, spec) else {
                throw InlineAttempt.wouldBlock("a thumbnail not in memory")
            }
            headers.add("X-Silo-Thumbnail-Cache", "hit")
            return HTTPResponse(status: 200, headers: headers, body: .bytes(bytes))
        }
        let made = try service.images.thumbnail(record, spec, blobs: service.blobs)
        headers.add("X-Silo-Thumbnail-Cache", made.cached ? "hit" : "miss")
        return HTTPResponse(status: 200, headers: headers, body: .bytes(made.bytes))
    }
}
