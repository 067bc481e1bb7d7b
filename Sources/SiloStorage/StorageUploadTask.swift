import Foundation
internal import SiloWire
import Synchronization

/// An upload with the resumable X-Goog-Upload protocol, as Firebase's Apple SDK speaks it: `start` (POST to the
/// object URL), then chunks (`upload` / `upload, finalize`, PUT to the session URL, no Authorization), and `query`
/// to learn the server's offset after a pause or an error.
public final class StorageUploadTask: StorageObservableTask, StorageTaskManagement, @unchecked Sendable {
    enum Source: Sendable {
        case data(Data)
        case file(URL)
    }

    /// Resumable-session state kept across workers (pause/resume).
    struct Session: Sendable {
        var url: URL?
        var granularity: Int64 = 256 * 1024
    }

    let source: Source
    let requestMetadata: StorageMetadata
    let session = Mutex(Session())

    init(reference: StorageReference, source: Source, metadata: StorageMetadata) {
        self.source = source
        self.requestMetadata = metadata
        super.init(reference: reference, metadata: metadata)
        // Known up front, so even the first (replayed) snapshot carries the total.
        if let total = try? totalSize() { core.withLock { $0.total = total } }
    }

    var storage: Storage { reference.storage }

    /// Starts the transfer; the factory methods already call it, and later calls do nothing.
    public func enqueue() { enqueueTask() }

    /// Stops moving bytes and fires `.pause`; `resume()` continues from where it stopped.
    public func pause() { pauseTask() }

    /// Fires `.resume` and continues a paused task; ignored while running.
    public func resume() { resumeTask() }

    /// Fails the task with `StorageError.cancelled` (observers get `.failure`), from any state but a final one.
    public func cancel() { cancelTask() }

    override func runWorker(_ w: Int) async {
        do {
            let metadata = try await upload(w)
            workerFinished(w, .success(metadata))
        } catch {
            let storageError = StorageError.transport(error, bucket: reference.bucket, object: reference.fullPath)
            if Task.isCancelled {
                if core.withLock({ $0.machine.state == .cancelled }) { sendCancel() }
                return
            }
            workerFinished(w, .failure(storageError))
        }
    }

    /// The number of bytes to upload; validates a file source first.
    func totalSize() throws(StorageError) -> Int64 {
        switch source {
        case .data(let d): return Int64(d.count)
        case .file(let url):
            let unreachable = StorageError.unknown(
                message:
                    "File at URL: \(url.absoluteString) is not reachable. Ensure file URL is not a directory, symbolic link, or invalid url.",
                serverError: [:])
            guard url.isFileURL, let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                attributes[.type] as? FileAttributeType == .typeRegular,
                let size = (attributes[.size] as? NSNumber)?.int64Value
            else { throw unreachable }
            return size
        }
    }

    private func upload(_ w: Int) async throws -> StorageMetadata {
        try reference.requireObject()
        let total = try totalSize()
        workerProgress(w, completed: 0, total: total)
        let budget = storage.maxUploadRetryTime
        var offset: Int64
        if let sessionURL = session.withLock({ $0.url }) {
            let status = try await query(sessionURL, budget: budget)
            if let metadata = status.metadata { return metadata }
            offset = status.offset
        } else {
            try await start(total: total, budget: budget)
            offset = 0
        }
        var backoff = RetryBackoff(budget: budget)
        let started = ContinuousClock.now
        while true {
            try Task.checkCancellation()
            let sessionURL = session.withLock { $0.url }!
            let length = chunkLength(offset: offset, total: total)
            let last = offset + length == total
            var headers = [
                "X-Goog-Upload-Protocol": "resumable",
                "X-Goog-Upload-Command": last ? (length == 0 ? "finalize" : "upload, finalize") : "upload",
                "X-Goog-Upload-Offset": String(offset),
                "X-Goog-Upload-Content-Length": String(total),
                "X-Firebase-Storage-Version": Storage.versionHeader,
            ]
            headers["Content-Type"] = "application/octet-stream"
            let body: StorageHTTPRequest.Body
            switch source {
            case .data(let d): body = length == 0 ? .none : .data(d.subdata(in: Int(offset)..<Int(offset + length)))
            case .file(let url): body = length == 0 ? .none : .file(url, offset: offset, length: length)
            }
            let base = offset
            do {
                let response = try await storage.transport.execute(
                    StorageHTTPRequest(method: "PUT", url: sessionURL, headers: headers, body: body), timeout: budget,
                    sent: { [weak self] sent in self?.workerProgress(w, completed: base + sent) })
                let uploadStatus = response.header("X-Goog-Upload-Status")?.lowercased()
                if response.status == 200, uploadStatus == "final" {
                    workerProgress(w, completed: total)
                    return try StorageMetadata.fromServer(response.body)
                }
                if response.status == 200, uploadStatus == "active" {
                    offset = response.header("X-Goog-Upload-Size-Received").flatMap(Int64.init) ?? offset + length
                    workerProgress(w, completed: offset)
                    continue
                }
                // An offset disagreement (4xx on an active session) or a retryable status: ask where the server is.
                let retryable =
                    RetryBackoff.isRetryable(status: response.status)
                    || (uploadStatus == "active" && (400..<500).contains(response.status) && response.status != 404)
                guard retryable else {
                    throw StorageError.http(
                        status: response.status, body: response.body, bucket: reference.bucket,
                        object: reference.fullPath)
                }
                let retryAfter = response.header("Retry-After").flatMap(TimeInterval.init)
                guard let delay = backoff.delay(elapsed: seconds(since: started), retryAfter: retryAfter) else {
                    throw StorageError.retryLimitExceeded
                }
                try await Task.sleep(for: .seconds(delay))
            } catch {
                guard RetryBackoff.isRetryable(error) else { throw error }
                guard let delay = backoff.delay(elapsed: seconds(since: started)) else {
                    throw StorageError.retryLimitExceeded
                }
                try await Task.sleep(for: .seconds(delay))
            }
            let status = try await query(sessionURL, budget: budget)
            if let metadata = status.metadata { return metadata }
            offset = status.offset
        }
    }

    private func seconds(since start: ContinuousClock.Instant) -> TimeInterval {
        let d = ContinuousClock.now - start
        return TimeInterval(d.components.seconds) + TimeInterval(d.components.attoseconds) / 1e18
    }

    /// The next chunk: everything left when no chunk size is set (one request, as Firebase does for files), else
    /// the requested size rounded to the server's granularity. Resumed file slices are capped at 32 MiB because a
    /// slice is read into memory.
    func chunkLength(offset: Int64, total: Int64) -> Int64 {
        let remaining = total - offset
        let requested = storage.uploadChunkSizeBytes
        let granularity = max(1, session.withLock { $0.granularity })
        var chunk = requested == .max ? remaining : max(granularity, requested / granularity * granularity)
        if case .file = source, offset > 0 { chunk = min(chunk, 32 << 20) }
        return min(chunk, remaining)
    }

    private func start(total: Int64, budget: TimeInterval) async throws {
        let contentType = requestMetadata.contentType ?? MIMETypes.fallback
        let response = try await storage.perform(
            method: "POST", path: reference.path, query: [("uploadType", "resumable"), ("name", reference.fullPath)],
            headers: [
                "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                "X-Goog-Upload-Content-Type": contentType, "X-Goog-Upload-Content-Length": String(total),
                "Content-Type": "application/json; charset=UTF-8",
            ],
            body: Data(requestMetadata.uploadJSON().serialized()), budget: budget)
        guard response.header("X-Goog-Upload-Status")?.lowercased() == "active",
            let location = response.header("X-Goog-Upload-URL"), let url = URL(string: location)
        else {
            throw StorageError.unknown(
                message: "Invalid data returned from the server: no resumable upload session", serverError: [:])
        }
        let granularity = response.header("X-Goog-Upload-Chunk-Granularity").flatMap(Int64.init)
        session.withLock {
            $0.url = url
            if let granularity, granularity > 0 { $0.granularity = granularity }
        }
    }

    /// Asks the server how much it has; a `final` session means the upload already completed.
    private func query(_ url: URL, budget: TimeInterval) async throws -> (offset: Int64, metadata: StorageMetadata?) {
        let request = StorageHTTPRequest(
            method: "PUT", url: url,
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "query"])
        let response = try await storage.withRetry(budget: budget) {
            try await self.storage.transport.execute(request, timeout: budget)
        }
        guard response.status == 200, let received = response.header("X-Goog-Upload-Size-Received").flatMap(Int64.init)
        else {
            throw StorageError.http(
                status: response.status, body: response.body, bucket: reference.bucket, object: reference.fullPath)
        }
        if response.header("X-Goog-Upload-Status")?.lowercased() == "final" {
            let metadata = try await reference.fetchMetadata()
            return (received, metadata)
        }
        return (received, nil)
    }

    /// Best effort: tells the server the session is over so it can drop the partial bytes.
    private func sendCancel() {
        guard let url = session.withLock({ $0.url }) else { return }
        let transport = storage.transport
        let request = StorageHTTPRequest(
            method: "PUT", url: url,
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "cancel"])
        Task { _ = try? await transport.execute(request, timeout: 30) }
    }
}
