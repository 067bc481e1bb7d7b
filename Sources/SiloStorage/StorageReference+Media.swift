package import Foundation
import Synchronization

/// One media response as SiloStorageUI needs it: the bytes (none on a 304) and the validators that key its cache.
package struct StorageMediaResponse: Sendable {
    /// True for a 304: the cached bytes whose ETag was sent are still the object's.
    package var notModified: Bool
    package var data: Data
    /// The quoted ETag as sent, for the next `If-None-Match`.
    package var etag: String?
    /// `X-Goog-Generation`; nil when the server names none.
    package var generation: Int64?
    package var contentType: String?
}

/// What SiloStorageUI needs beyond Firebase's API, at `package` level so that it adds nothing to SiloStorage's
/// public surface: one `alt=media` GET with extra query parameters (thumbnails) and `If-None-Match`. It goes through
/// the same URL building, tokens, retry and status mapping as every other request.
extension StorageReference {
    /// Downloads into memory, at most `maxSize` bytes (more, announced or received, fails with
    /// `.downloadSizeExceeded`). A 304 to `ifNoneMatch` returns `notModified` and no bytes. Swift Task
    /// cancellation stops the transfer and throws `.cancelled`.
    package func media(query extra: [(String, String)] = [], ifNoneMatch: String? = nil, maxSize: Int64)
        async throws(StorageError) -> StorageMediaResponse
    {
        try requireObject()
        let url = storage.url(for: path, query: [("alt", "media")] + extra)
        do {
            var headers = try await storage.standardHeaders(for: url, path: path)
            if let ifNoneMatch { headers["If-None-Match"] = ifNoneMatch }
            let request = StorageHTTPRequest(method: "GET", url: url, headers: headers)
            let budget = storage.maxDownloadRetryTime
            let response = try await storage.withRetry(budget: budget) {
                let receiver = BoundedMediaReceiver(maxSize: maxSize)
                try await self.storage.transport.stream(request, timeout: budget, receiver: receiver, sent: nil)
                return try receiver.response()
            }
            if response.status == 304, ifNoneMatch != nil {
                return StorageMediaResponse(
                    notModified: true, data: Data(), etag: response.header("ETag") ?? ifNoneMatch,
                    generation: response.header("X-Goog-Generation").flatMap(Int64.init),
                    contentType: response.header("Content-Type"))
            }
            guard (200..<300).contains(response.status) else {
                throw StorageError.http(status: response.status, body: response.body, bucket: bucket, object: fullPath)
            }
            return StorageMediaResponse(
                notModified: false, data: response.body, etag: response.header("ETag"),
                generation: response.header("X-Goog-Generation").flatMap(Int64.init),
                contentType: response.header("Content-Type"))
        } catch {
            throw StorageError.transport(error, bucket: bucket, object: fullPath)
        }
    }
}

/// Collects a 2xx body up to `maxSize` (checked against `Content-Length` first, so an oversized object is refused
/// before its bytes arrive) and the start of any other body, for the error it becomes.
private final class BoundedMediaReceiver: StorageResponseReceiver {
    /// Error bodies are JSON messages; more than this is not kept.
    private static let errorBodyLimit = 64 << 10
    private struct State {
        var head: StorageHTTPResponseHead?
        var body = Data()
    }
    private let state = Mutex(State())
    let maxSize: Int64

    init(maxSize: Int64) { self.maxSize = maxSize }

    func receive(head: StorageHTTPResponseHead) throws {
        if (200..<300).contains(head.status), let length = head.header("Content-Length").flatMap(Int64.init),
            length > maxSize
        {
            throw StorageError.downloadSizeExceeded(total: length, maxSize: maxSize)
        }
        state.withLock { $0.head = head }
    }

    func receive(body chunk: Data) throws {
        try state.withLock {
            let success = $0.head.map { (200..<300).contains($0.status) } ?? false
            if success {
                let total = Int64($0.body.count + chunk.count)
                guard total <= maxSize else { throw StorageError.downloadSizeExceeded(total: total, maxSize: maxSize) }
                $0.body.append(chunk)
            } else if $0.body.count < Self.errorBodyLimit {
                $0.body.append(chunk.prefix(Self.errorBodyLimit - $0.body.count))
            }
        }
    }

    func response() throws -> StorageHTTPResponse {
        try state.withLock {
            guard let head = $0.head else {
                throw StorageError.internalError(message: "No response from the transport")
            }
            return StorageHTTPResponse(head: head, body: $0.body)
        }
    }
}
