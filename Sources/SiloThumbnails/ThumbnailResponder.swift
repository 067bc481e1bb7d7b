import SiloCore
import SiloHTTP
import SiloServerKit

/// Answers a media read that asks for a thumbnail, after the route has authorized the read of the original exactly
/// as a download: its own type and validators, conditional requests, caching headers.
struct ThumbnailResponder {
    let service: ObjectService
    let images: ImageService

    /// What a thumbnail is cached for when the object names no `Cache-Control`: private (it was authorized per
    /// caller), an hour.
    static let defaultCacheControl = "private, max-age=3600"

    package func respond(_ record: ObjectRecord, _ spec: ThumbnailSpec, request: HTTPRequestHead) throws -> HTTPResponse
    {
        try CustomerEncryption.checkRead(record, request.headers)
        // A result in memory answers with headers formatted when it was made: on the event loop too.
        if let hot = images.memoryHit(record, spec, waiting: service.inlineAttempt == nil) {
            if let early = try Self.conditional(request, etag: hot.etag, record, headers: hot.headers) { return early }
            return HTTPResponse(status: 200, headers: hot.headers, body: .bytes(hot.bytes))
        }
        // Derived from the version and the parameters: the same bytes for as long as both are the same.
        let etag = "\"\(record.generation)-\(spec)\""
        var headers = HTTPHeaders(minimumCapacity: 10)
        headers.add("Content-Type", spec.format.contentType)
        headers.add("ETag", etag)
        headers.add("Last-Modified", record.updated.rfc1123)
        headers.add("Cache-Control", record.fields.cacheControl ?? Self.defaultCacheControl)
        headers.add("X-Goog-Generation", String(record.generation))
        ContentIsolation.add(to: &headers)
        if let early = try Self.conditional(request, etag: etag, record, headers: headers) { return early }
        if request.method == "HEAD" {
            return try Self.head(record, spec, headers: headers, images: images, inline: service.inlineAttempt)
        }
        // On the event loop (an inline attempt) nothing else is served: a disk read or a transform goes to a worker.
        if let attempt = service.inlineAttempt { throw attempt.wouldBlock("a thumbnail not in memory") }
        var hit = headers
        hit.add("X-Silo-Thumbnail-Cache", "hit")
        let formatted = hit.preformatted()
        let made = try images.thumbnail(record, spec, blobs: service.blobs) { bytes in
            ImageService.Hot(bytes: bytes, etag: etag, headers: formatted, metageneration: record.metageneration)
        }
        headers.add("X-Silo-Thumbnail-Cache", made.cached ? "hit" : "miss")
        return HTTPResponse(status: 200, headers: headers, body: .bytes(made.bytes))
    }

    /// A HEAD describes the thumbnail without making it: the length of a result the disk cache holds (its index is
    /// in memory, so the event loop answers this too), else no length at all. RFC 9110 §9.3.2 lets a HEAD leave out
    /// the fields known only once the content is made, and §8.6 allows no Content-Length but the GET's; a body-less
    /// stream of unknown length makes every transport send neither `Content-Length` nor `Transfer-Encoding`
    /// (`.empty` would declare 0). Only what needs no bytes is refused as the GET refuses it: an empty original.
    /// Bytes libvips would refuse (not an image, too many pixels) answer 200 here and 400 to the GET.
    /// `inline`: the attempt of an event loop, which does not wait for the disk cache's lock.
    private static func head(
        _ record: ObjectRecord, _ spec: ThumbnailSpec, headers: HTTPHeaders, images: ImageService,
        inline: InlineAttempt?
    ) throws -> HTTPResponse {
        guard record.size > 0 else {
            throw StorageError(
                .invalidArgument,
                "\(record.bucket)/\(record.name): the object is empty, not an image this server transforms")
        }
        var headers = headers
        let held: Int64?
        do { held = try images.cachedLength(record, spec, waiting: inline == nil) } catch {
            throw inline?.wouldBlock("the thumbnail cache, held by another thread") ?? StorageError.wrap(error)
        }
        guard let length = held else {
            headers.add("X-Silo-Thumbnail-Cache", "miss")
            return HTTPResponse(status: 200, headers: headers, body: .stream(length: nil, NoBody()))
        }
        headers.add("X-Silo-Thumbnail-Cache", "hit")
        headers.add("Content-Length", String(length))
        return HTTPResponse(status: 200, headers: headers)
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

/// The body of a HEAD whose length is not known: never read (the transports send no body to a HEAD), only closed.
private final class NoBody: ResponseBodyProducer {
    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { 0 }
    func close() {}
}
