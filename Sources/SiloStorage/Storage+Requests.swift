import Foundation
internal import SiloWire
import Synchronization

/// URL building, auth headers, retry and status mapping for every request the SDK makes.
extension Storage {
    static let versionHeader = "swift/silo-storage-1"

    var baseURL: String {
        settings.withLock { "\($0.scheme)://\($0.host):\($0.port)" }
    }

    /// `…/v0/b/<bucket>/o/<object>`; or `…/v0/b/<bucket>/o` for the root. Names are escaped as the Apple SDK does.
    func url(for path: StoragePath, query: [(String, String)] = []) -> URL {
        var text = baseURL + "/v0/b/" + V0NameEncoding.encodePathSegment(path.bucket) + "/o"
        if !path.isRoot { text += "/" + V0NameEncoding.encodePathSegment(path.object) }
        if !query.isEmpty {
            text += "?" + query.map { "\($0.0)=\(V0NameEncoding.encodeQueryValue($0.1))" }.joined(separator: "&")
        }
        guard let url = URL(string: text) else { fatalError("Internal error: cannot build a URL from \(text)") }
        return url
    }

    /// Tokens go only over https or to a loopback host, as Firebase ≥ 12.17 does.
    static func mayAttachTokens(to url: URL) -> Bool {
        if url.scheme?.lowercased() == "https" { return true }
        return ["localhost", "127.0.0.1", "::1", "[::1]"].contains(url.host?.lowercased() ?? "")
    }

    /// The headers every request carries: SDK version, and the ID and App Check tokens when allowed.
    func standardHeaders(for url: URL, path: StoragePath) async throws -> [String: String] {
        var headers = ["X-Firebase-Storage-Version": Storage.versionHeader]
        guard Storage.mayAttachTokens(to: url) else { return headers }
        if let idTokenProvider {
            do {
                if let token = try await idTokenProvider() { headers["Authorization"] = "Firebase \(token)" }
            } catch {
                if error is CancellationError { throw StorageError.cancelled }
                throw StorageError.unauthenticated(serverError: [
                    "bucket": path.bucket, NSUnderlyingErrorKey: error as NSError,
                    "ResponseErrorDomain": "com.google.HTTPStatus",
                    "ResponseErrorCode": 401,
                ])
            }
        }
        if let appCheckTokenProvider, let token = try? await appCheckTokenProvider() {
            headers["X-Firebase-AppCheck"] = token
        }
        return headers
    }

    /// Sends a small request with retry inside `budget` seconds; non-2xx statuses become `StorageError`s.
    /// Task cancellation surfaces as `StorageError.cancelled`.
    func perform(
        method: String, path: StoragePath, query: [(String, String)] = [], headers extra: [String: String] = [:],
        body: Data? = nil, budget: TimeInterval
    ) async throws(StorageError) -> StorageHTTPResponse {
        let url = url(for: path, query: query)
        do {
            var headers = try await standardHeaders(for: url, path: path)
            for (k, v) in extra { headers[k] = v }
            let request = StorageHTTPRequest(
                method: method, url: url, headers: headers, body: body.map { .data($0) } ?? .none)
            let response = try await withRetry(budget: budget) {
                try await self.transport.execute(request, timeout: budget)
            }
            guard (200..<300).contains(response.status) else {
                throw StorageError.http(
                    status: response.status, body: response.body, bucket: path.bucket, object: path.object)
            }
            return response
        } catch {
            throw StorageError.transport(error, bucket: path.bucket, object: path.object)
        }
    }

    /// Runs `attempt` until it returns a non-retryable response or error, sleeping per `RetryBackoff`. A retryable
    /// failure when the budget allows no further attempt throws `StorageError.retryLimitExceeded`.
    func withRetry(
        budget: TimeInterval, _ attempt: @Sendable () async throws -> StorageHTTPResponse
    ) async throws -> StorageHTTPResponse {
        var backoff = RetryBackoff(budget: budget)
        let start = ContinuousClock.now
        while true {
            try Task.checkCancellation()
            let elapsed = { () -> TimeInterval in
                let d = ContinuousClock.now - start
                return TimeInterval(d.components.seconds) + TimeInterval(d.components.attoseconds) / 1e18
            }
            let delay: TimeInterval?
            do {
                let response = try await attempt()
                guard RetryBackoff.isRetryable(status: response.status) else { return response }
                delay = backoff.delay(
                    elapsed: elapsed(), retryAfter: response.header("Retry-After").flatMap(TimeInterval.init))
            } catch {
                guard RetryBackoff.isRetryable(error) else { throw error }
                delay = backoff.delay(elapsed: elapsed())
            }
            guard let delay else { throw StorageError.retryLimitExceeded }
            try await Task.sleep(for: .seconds(delay))
        }
    }

    /// Runs `body` on the callback queue.
    func callback(_ body: @escaping @Sendable () -> Void) {
        callbackQueue.async(execute: body)
    }
}
