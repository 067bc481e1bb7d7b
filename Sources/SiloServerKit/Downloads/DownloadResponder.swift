package import SiloCore
package import SiloHTTP
import SiloHashing
import SiloWire

/// Builds the response that carries an object's bytes: validators, Range, gzip transcoding, and the cheapest body
/// form (memory for small objects, sendfile for local files, a pull stream otherwise).
package struct DownloadResponder {
    let service: ObjectService

    package init(service: ObjectService) {
        self.service = service
    }

    /// Serves the bytes of the object `lookup` finds, or its `thumbnail`. An overwrite between reading the metadata
    /// and opening the blob can delete the blob just found; then the object is looked up again (at most twice more).
    /// Bytes still missing after that are a 503 (``MissingBlob``), logged, never a 404: the object exists.
    package func respond(
        _ context: RequestContext, api: DownloadHeaders.API = .firebase, thumbnail: ThumbnailSpec? = nil,
        lookup: () throws -> ObjectRecord
    ) throws -> HTTPResponse {
        let request = context.head
        var attempt = 0
        while true {
            let record = try lookup()
            do {
                if let thumbnail {
                    return try service.images.respond(record, thumbnail, request: request, service: service)
                }
                return try respond(record, request: request, api: api, principal: context.principal)
            } catch let error as StorageError where error.isMissingBlob && attempt < 2 {
                attempt += 1
            }
        }
    }

    /// `principal` (with the request's peer) is who a decompressive transcoding counts against.
    func respond(
        _ record: ObjectRecord, request: HTTPRequestHead, api: DownloadHeaders.API = .firebase, principal: Principal?
    ) throws -> HTTPResponse {
        try CustomerEncryption.checkRead(record, request.headers)
        let prepared = service.versionResponses.downloadHeaders(record).variant(api)
        switch ValidatorConditions(request.headers).evaluate(etag: prepared.etag, modified: record.updated) {
        case .proceed: break
        case .notModified: return HTTPResponse(status: 304, headers: prepared.base)
        case .failed:
            throw StorageError(
                .preconditionFailed, "If-Match or If-Unmodified-Since does not hold for \(record.bucket)/\(record.name)"
            )
        }

        let isGzip = record.fields.contentEncoding.map { equalsIgnoringCase($0, "gzip") } ?? false
        let acceptsGzip = request.headers["Accept-Encoding"].map { $0.lowercased().contains("gzip") } ?? false
        // A small object read before needs no file at all.
        let cached =
            record.size <= service.configuration.inlineDownloadLimit
            ? service.smallBlobs.bytes(record.blobID, waiting: service.inlineAttempt == nil) : nil
        let reader = cached == nil ? try openReader(record) : nil
        if isGzip && !acceptsGzip {
            // Decompressive transcoding: the bytes sent are not the stored ones, so no length, no hash, no Range.
            // The inflating is work the stored size does not bound; it counts against the caller's budget (named
            // only here: making the name costs a string per request, which no other download needs).
            // Never on an event loop: the budget's lock may be held, and the inflating is work besides.
            if let attempt = service.inlineAttempt {
                throw attempt.wouldBlock("transcoding \(record.bucket)/\(record.name)")
            }
            let caller = service.quotaCaller(principal, peer: request.peer)
            try service.inflation.admit(caller)
            let reader = try reader ?? openReader(record)
            if record.size > 0 && request.method != "HEAD" { try Self.prime(reader, at: 0, record) }
            let producer = try GunzipProducer(reader: reader) { [inflation = service.inflation] in
                inflation.charge(caller, $0)
            }
            return HTTPResponse(status: 200, headers: prepared.base, body: .stream(length: nil, producer))
        }
        switch ByteRange.resolve(request.headers["Range"], size: record.size) {
        case .unsatisfiable:
            var headers = prepared.encoded
            headers.add("Content-Range", "bytes */\(record.size)")
            headers.remove("Content-Type")
            return HTTPResponse(status: 416, headers: headers)
        case .whole:
            // Prepared with Content-Encoding and X-Goog-Hash, formatted once: no copy of the list per request.
            return HTTPResponse(
                status: 200, headers: prepared.whole,
                body: try body(
                    record, cached: cached, reader: reader, offset: 0, length: record.size,
                    head: request.method == "HEAD"
                ))
        case .partial(let start, let end):
            var headers = prepared.encoded
            headers.add("Content-Range", "bytes \(start)-\(end)/\(record.size)")
            return HTTPResponse(
                status: 206, headers: headers,
                body: try body(
                    record, cached: cached, reader: reader, offset: start, length: end - start + 1,
                    head: request.method == "HEAD"))
        }
    }

    /// Opens the blob. A concurrent overwrite may delete it between the metadata read and here; the caller retries.
    private func openReader(_ record: ObjectRecord) throws -> any BlobReader {
        try service.blobs.openBytes(of: record)
    }

    /// `cached` is the whole blob from the cache; otherwise `reader` is open on it. `head`: the body will not be sent.
    private func body(
        _ record: ObjectRecord, cached: [UInt8]?, reader: (any BlobReader)?, offset: Int64, length: Int64, head: Bool
    ) throws -> ResponseBody {
        if length == 0 { return .empty }
        if let cached {
            if offset == 0 && Int64(cached.count) == length { return .bytes(cached) }
            return .bytes(Array(cached[Int(offset)..<Int(offset + length)]))
        }
        let reader = try reader ?? openReader(record)
        if length <= service.configuration.inlineDownloadLimit {
            let bytes = try reader.readBytes(Int(length), at: offset)
            if offset == 0 && length == record.size { service.smallBlobs.insert(record.blobID, bytes) }
            return .bytes(bytes)
        }
        if let fd = reader.takeFileDescriptor() {
            return .file(OwnedFileDescriptor(fd), offset: offset, length: length)
        }
        if !head { try Self.prime(reader, at: offset, record) }
        return .stream(length: length, BlobRangeProducer(reader: reader, offset: offset, length: length))
    }

    /// Reads the first byte of a streamed body before the head is sent: a store that cannot serve it (an S3 store
    /// whose first ranged GET fails) is still a 503 then, not a 200 whose body never comes. Readers that fetch ahead
    /// keep what this fetched (S3's read-ahead window), so the stream's first read costs no second request. A
    /// failure after the head ends the connection mid-body, so the client sees a truncated answer, never a short
    /// one (the transports close a stream that ends early or throws).
    private static func prime(_ reader: any BlobReader, at offset: Int64, _ record: ObjectRecord) throws {
        var byte: UInt8 = 0
        let read = try withUnsafeMutableBytes(of: &byte) { try reader.read(into: $0, at: offset) }
        guard read == 1 else {
            throw StorageError(
                .unavailable, "The bytes of \(record.bucket)/\(record.name) end before \(offset + 1) bytes",
                cause: MissingBlob(blob: record.blobID, underlying: StorageError(.corrupt, "blob is short")))
        }
    }

    /// `{stored disposition or "attachment"}; filename*={name}` unless the stored value names a file already.
    static func contentDisposition(_ record: ObjectRecord) -> String {
        let stored = record.fields.contentDisposition ?? "attachment"
        if Self.mentionsFilename(stored) { return stored }
        let last = String(record.name.lastComponent)
        let encoded = PercentCoding.encodeComponent(last)
        return encoded == last ? "\(stored); filename*=\(last)" : "\(stored); filename*=utf-8''\(encoded)"
    }

    /// Whether `text` contains "filename" in any case. ASCII text (the usual case) is searched byte-wise, which is
    /// what `lowercased().contains` computes for it at a fraction of the cost; other text takes that general path.
    static func mentionsFilename(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.allSatisfy({ $0 < 0x80 }) else { return text.lowercased().contains("filename") }
        let needle: [UInt8] = Array("filename".utf8)
        var window = 0
        var start = utf8.startIndex
        while start != utf8.endIndex {
            var i = start
            window = 0
            while i != utf8.endIndex && window < needle.count {
                let byte = utf8[i]
                let lower = byte >= 0x41 && byte <= 0x5A ? byte + 32 : byte
                guard lower == needle[window] else { break }
                window += 1
                i = utf8.index(after: i)
            }
            if window == needle.count { return true }
            start = utf8.index(after: start)
        }
        return false
    }

    /// `If-None-Match` against our strong etag: `*`, a list, weak or strong forms.
    package static func matches(_ header: String, etag: String) -> Bool {
        for candidate in header.split(separator: ",") {
            var tag = candidate.trimmingCharacters(in: " ")
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = String(tag.dropFirst(2)) }
            if tag == etag || "\"\(tag)\"" == etag { return true }
        }
        return false
    }
}

/// Streams `length` bytes of a blob from `offset` (blob stores without local files).
final class BlobRangeProducer: ResponseBodyProducer {
    private let reader: any BlobReader
    private var offset: Int64
    private var remaining: Int64

    init(reader: any BlobReader, offset: Int64, length: Int64) {
        self.reader = reader
        self.offset = offset
        self.remaining = length
    }

    package func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard remaining > 0 else { return 0 }
        let want = Int(min(Int64(buffer.count), remaining))
        let n = try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
        guard n > 0 else { throw StorageError(.corrupt, "blob ended early") }
        offset += Int64(n)
        remaining -= Int64(n)
        return n
    }

    package func close() {}
}

/// Streams the decompressed bytes of a gzip blob, inflating one input block at a time. Each piece is offered to
/// `charge` before it is sent; when that refuses, the stream fails (and the transport cuts the body off).
final class GunzipProducer: ResponseBodyProducer {
    private let reader: any BlobReader
    private let inflater: GzipInflater
    private let charge: (Int) -> Bool
    private var offset: Int64 = 0
    private var output: [UInt8] = []
    private var outputStart = 0
    private var finished = false
    /// Small input blocks bound the decompressed bytes held at once (deflate expands at most ~1032:1).
    private let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 8 << 10, alignment: 16)

    init(reader: any BlobReader, charge: @escaping (Int) -> Bool) throws {
        self.reader = reader
        self.inflater = try GzipInflater()
        self.charge = charge
    }

    deinit { input.deallocate() }

    package func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while outputStart == output.count {
            if finished { return 0 }
            output.removeAll(keepingCapacity: true)
            outputStart = 0
            let n = try reader.read(into: input, at: offset)
            if n == 0 {
                try inflater.finish()
                finished = true
                continue
            }
            offset += Int64(n)
            try inflater.feed(UnsafeRawBufferPointer(rebasing: input[0..<n])) { piece in
                output.append(contentsOf: piece)
            }
        }
        let count = min(buffer.count, output.count - outputStart)
        guard charge(count) else {
            throw StorageError(
                .tooManyRequests, "decompressive transcoding stopped: the caller's budget of inflated bytes is spent")
        }
        output.withUnsafeBytes { src in
            buffer.baseAddress!.copyMemory(from: src.baseAddress! + outputStart, byteCount: count)
        }
        outputStart += count
        return count
    }

    package func close() {}
}
