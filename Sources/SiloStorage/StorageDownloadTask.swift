import Foundation
import Synchronization

/// A download to memory (`getData`) or to a file (`write(toFile:)`). Bytes are written as they arrive, under the
/// task's lock, so a paused or cancelled worker can never write again. Pause stops the request; resume asks for
/// `Range: bytes=<received>-` and appends (and starts over if the server answers 200 instead of 206).
public final class StorageDownloadTask: StorageObservableTask, StorageTaskManagement, @unchecked Sendable {
    enum Destination: Sendable {
        case memory(maxSize: Int64)
        case file(URL)
    }

    let destination: Destination
    /// Where the bytes go until the download succeeds; then it is moved over the destination.
    let partialFile: URL?

    init(reference: StorageReference, destination: Destination) {
        self.destination = destination
        if case .file(let url) = destination {
            let target = StorageDownloadTask.fileURL(url)
            partialFile = target.deletingLastPathComponent()
                .appendingPathComponent(".\(target.lastPathComponent).silo-\(UUID().uuidString).partial")
        } else {
            partialFile = nil
        }
        super.init(reference: reference)
        core.withLock { $0.partialFile = partialFile }
    }

    /// A URL without a scheme (`URL(string: "path/to/file")`) is taken as a path relative to the working directory.
    static func fileURL(_ url: URL) -> URL {
        url.scheme == nil ? URL(fileURLWithPath: url.relativeString) : url
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

    /// Takes the downloaded bytes (getData), leaving the task empty.
    func takeData() -> Data {
        core.withLock { core in
            defer { core.data = Data() }
            return core.data
        }
    }

    override func runWorker(_ w: Int) async {
        var backoff = RetryBackoff(budget: storage.maxDownloadRetryTime)
        let started = ContinuousClock.now
        while true {
            do {
                try await attempt(w)
                finishSuccess(w)
                return
            } catch {
                if Task.isCancelled { return }
                let d = ContinuousClock.now - started
                let elapsed = TimeInterval(d.components.seconds) + TimeInterval(d.components.attoseconds) / 1e18
                let failure: StorageError
                if let http = error as? DownloadReceiver.Failure {
                    // 408/502/503/504 are retried like any request (honouring `Retry-After`); others map at once.
                    if RetryBackoff.isRetryable(status: http.status) {
                        if let delay = backoff.delay(elapsed: elapsed, retryAfter: http.retryAfter) {
                            try? await Task.sleep(for: .seconds(delay))
                            continue
                        }
                        failure = .retryLimitExceeded
                    } else {
                        failure = .http(
                            status: http.status, body: http.body, bucket: reference.bucket, object: reference.fullPath)
                    }
                } else if RetryBackoff.isRetryable(error) {
                    if let delay = backoff.delay(elapsed: elapsed) {
                        try? await Task.sleep(for: .seconds(delay))
                        continue
                    }
                    failure = .retryLimitExceeded
                } else {
                    failure = .transport(error, bucket: reference.bucket, object: reference.fullPath)
                }
                workerFinished(w, .failure(failure))
                return
            }
        }
    }

    private func attempt(_ w: Int) async throws {
        try reference.requireObject()
        if case .file(let url) = destination, !StorageDownloadTask.fileURL(url).isFileURL {
            throw StorageError.unknown(
                message: "File at URL: \(url.absoluteString) is not a file URL.", serverError: [:])
        }
        let offset = try openOutput(w)
        // Paused after the last byte arrived but before success: there is nothing left to ask for (a `Range` at the
        // size would only get 416), so the resumed task succeeds without a request.
        if offset > 0, offset == core.withLock({ $0.total }) { return }
        let url = storage.url(for: reference.path, query: [("alt", "media")])
        var headers = try await storage.standardHeaders(for: url, path: reference.path)
        if offset > 0 { headers["Range"] = "bytes=\(offset)-" }
        let receiver = DownloadReceiver(task: self, worker: w, offset: offset)
        try await storage.transport.stream(
            StorageHTTPRequest(method: "GET", url: url, headers: headers), timeout: storage.maxDownloadRetryTime,
            receiver: receiver, sent: nil)
        if let failure = receiver.failure { throw failure }
    }

    /// Opens the partial file at the bytes already received (creating directories as needed); returns that count.
    private func openOutput(_ w: Int) throws -> Int64 {
        try core.withLock { core in
            guard core.machine.isCurrent(w) else { throw CancellationError() }
            guard let partialFile else { return Int64(core.data.count) }
            try? core.file?.close()
            let fm = FileManager.default
            try fm.createDirectory(at: partialFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            if !fm.fileExists(atPath: partialFile.path) { _ = fm.createFile(atPath: partialFile.path, contents: nil) }
            let handle = try FileHandle(forWritingTo: partialFile)
            // Truncate only when there is something to cut: on ext4, truncating a file (even an empty one) to 0
            // makes its close() write back all its data synchronously (auto_da_alloc), ~20% of a download's time.
            if try handle.seekToEnd() != UInt64(core.completed) {
                try handle.truncate(atOffset: UInt64(core.completed))
            }
            try handle.seek(toOffset: UInt64(core.completed))
            core.file = handle
            return core.completed
        }
    }

    /// Called by the receiver when the response head arrives: the server ignored our Range (200), so start over.
    func restartFromZero(_ w: Int) throws {
        try core.withLock { core in
            guard core.machine.isCurrent(w) else { throw CancellationError() }
            core.completed = 0
            core.lastReported = -1
            core.data = Data()
            try core.file?.truncate(atOffset: 0)
            try core.file?.seek(toOffset: 0)
        }
    }

    /// Appends bytes from worker `w`; throws if `w` is stale or `maxSize` is exceeded (which stops the transfer).
    func append(_ chunk: Data, from w: Int) throws {
        try core.withLock { core in
            guard core.machine.isCurrent(w) else { throw CancellationError() }
            if case .memory(let maxSize) = destination {
                let received = core.completed + Int64(chunk.count)
                if received > maxSize {
                    throw StorageError.downloadSizeExceeded(
                        total: core.total >= 0 ? core.total : received, maxSize: maxSize)
                }
                core.data.append(chunk)
            } else {
                try core.file?.write(contentsOf: chunk)
            }
            core.completed += Int64(chunk.count)
        }
        workerProgress(w, completed: core.withLock { $0.completed })
    }

    /// Checks the announced size against `maxSize` before any body byte is read.
    func expect(total: Int64, from w: Int) throws {
        if case .memory(let maxSize) = destination, total > maxSize {
            throw StorageError.downloadSizeExceeded(total: total, maxSize: maxSize)
        }
        workerProgress(w, completed: core.withLock { $0.completed }, total: total)
    }

    /// Moves the partial file over the destination (replacing what was there) inside the success transition, so a
    /// concurrent cancel either wins before the move or finds the task already succeeded.
    private func finishSuccess(_ w: Int) {
        transition { core in
            guard core.machine.isCurrent(w) else { return .none }
            if let partialFile, case .file(let url) = destination {
                do {
                    try core.file?.close()
                    core.file = nil
                    let target = StorageDownloadTask.fileURL(url)
                    let fm = FileManager.default
                    try fm.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                    if fm.fileExists(atPath: target.path) { try fm.removeItem(at: target) }
                    try fm.moveItem(at: partialFile, to: target)
                    core.partialFile = nil
                } catch {
                    let storageError = StorageError.transport(
                        error, bucket: reference.bucket, object: reference.fullPath)
                    core.error = storageError
                    return core.machine.failed(worker: w, code: storageError.code)
                }
            }
            if core.total < 0 { core.total = core.completed }
            return core.machine.succeeded(worker: w)
        }
    }
}

/// Feeds one download response into its task.
final class DownloadReceiver: StorageResponseReceiver {
    /// A non-2xx response: its status, the start of its body, and its `Retry-After` in seconds.
    struct Failure: Error, Sendable {
        var status: Int
        var body = Data()
        var retryAfter: TimeInterval?
    }
    private let state = Mutex<Failure?>(nil)
    /// Set by a 416 that says everything already arrived; its body is not object data.
    private let satisfied = Mutex(false)
    let task: StorageDownloadTask
    let worker: Int
    let offset: Int64

    init(task: StorageDownloadTask, worker: Int, offset: Int64) {
        self.task = task
        self.worker = worker
        self.offset = offset
    }

    var failure: Failure? { state.withLock { $0 } }

    func receive(head: StorageHTTPResponseHead) throws {
        // 416 to `Range: bytes=<offset>-` with `Content-Range: bytes */<offset>`: everything already arrived (the
        // size was unknown when the task paused). The empty body then ends the attempt, which succeeds.
        if head.status == 416, offset > 0,
            let range = head.header("Content-Range"), range.hasPrefix("bytes */"),
            Int64(range.dropFirst("bytes */".count)) == offset
        {
            satisfied.withLock { $0 = true }
            try task.expect(total: offset, from: worker)
            return
        }
        guard (200..<300).contains(head.status) else {
            let retryAfter = head.header("Retry-After").flatMap(TimeInterval.init)
            state.withLock { $0 = Failure(status: head.status, retryAfter: retryAfter) }
            return
        }
        let length = head.header("Content-Length").flatMap(Int64.init)
        if head.status == 206 {
            // `Content-Range: bytes <start>-<end>/<size>`: the server must continue where we stopped.
            let range = head.header("Content-Range") ?? ""
            let numbers = range.split(whereSeparator: { !$0.isNumber }).compactMap { Int64($0) }
            guard numbers.count == 3, numbers[0] == offset else {
                throw StorageError.unknown(
                    message: "Unexpected Content-Range \(range) when resuming at \(offset)", serverError: [:])
            }
            try task.expect(total: numbers[2], from: worker)
        } else {
            if offset > 0 { try task.restartFromZero(worker) }
            try task.expect(total: length ?? -1, from: worker)
        }
    }

    func receive(body chunk: Data) throws {
        if satisfied.withLock({ $0 }) { return }
        let collecting = state.withLock { failure -> Bool in
            guard failure != nil else { return false }
            if failure!.body.count < 64 * 1024 { failure!.body.append(chunk) }
            return true
        }
        if !collecting { try task.append(chunk, from: worker) }
    }
}
