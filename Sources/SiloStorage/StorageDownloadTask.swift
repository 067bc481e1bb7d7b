import Foundation
import Synchronization

/// A download to memory (`getData`) or to a file (`write(toFile:)`). Bytes are written as they arrive, each write
/// by the worker holding the partial file (`PartialFile`) and outside the task's lock; only bytes written while
/// their worker is current count, so a paused or cancelled worker never adds to the result. Pause stops the
/// request; resume asks for `Range: bytes=<received>-` and appends (and starts over if the server answers 200
/// instead of 206).
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
        core.withLock { $0.partial.url = partialFile }
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
                await finishSuccess(w)
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
        let offset = try await openOutput(w)
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
    private func openOutput(_ w: Int) async throws -> Int64 {
        guard let partialFile else {
            return try core.withLock { core in
                guard core.machine.isCurrent(w) else { throw CancellationError() }
                return Int64(core.data.count)
            }
        }
        try await holdPartialFile(w)
        var opened: FileHandle?
        do {
            let start = try core.withLock { core in
                guard core.machine.isCurrent(w) else { throw CancellationError() }
                defer { core.partial.handle = nil }
                return Reopening(completed: core.completed, previous: core.partial.handle)
            }
            try? start.previous?.close()
            let fm = FileManager.default
            try fm.createDirectory(at: partialFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            if !fm.fileExists(atPath: partialFile.path) { _ = fm.createFile(atPath: partialFile.path, contents: nil) }
            let handle = try FileHandle(forWritingTo: partialFile)
            opened = handle
            // Truncate only when there is something to cut: on ext4, truncating a file (even an empty one) to 0
            // makes its close() write back all its data synchronously (auto_da_alloc), ~20% of a download's time.
            if try handle.seekToEnd() != UInt64(start.completed) {
                try handle.truncate(atOffset: UInt64(start.completed))
            }
            try handle.seek(toOffset: UInt64(start.completed))
            releasePartialFile { $0.partial.handle = handle }
            return start.completed
        } catch {
            try? opened?.close()
            releasePartialFile()
            throw error
        }
    }

    /// The byte count an open starts from, and the handle of the previous open (closed by the new one).
    private struct Reopening: Sendable {
        var completed: Int64
        var previous: FileHandle?
    }

    /// Waits (suspended) until nobody else holds the partial file, then holds it for worker `w`. A stale worker is
    /// refused before it queues; one that goes stale while it waits finds out once it holds the file.
    private func holdPartialFile(_ w: Int) async throws {
        let holding = await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
            let now = core.withLock { core -> Bool? in
                guard core.machine.isCurrent(w) else { return nil }
                return core.partial.hold(orQueue: waiter)
            }
            switch now {
            case nil: waiter.resume(returning: false)
            case true?: waiter.resume(returning: true)
            case false?: break  // `release` resumes it
            }
        }
        guard holding else { throw CancellationError() }
    }

    /// Holds the partial file for current worker `w` without waiting (its own open already waited for every
    /// earlier holder, and no stale worker takes the file while `w` is current), then runs `update` under the same
    /// lock. Returns the open handle as it was before `update`.
    private func holdPartialFileNow(_ w: Int, _ update: (inout Core) -> Void = { _ in }) throws -> FileHandle? {
        try core.withLock { core in
            guard core.machine.isCurrent(w) else { throw CancellationError() }
            guard core.partial.hold() else {
                throw StorageError.internalError(message: "The partial file of a download is in use twice")
            }
            let handle = core.partial.handle
            update(&core)
            return handle
        }
    }

    /// Lets go of the partial file after `update` (under the lock): the next waiting open holds it, or, if the task
    /// ended meanwhile, the file is removed.
    private func releasePartialFile(_ update: (inout Core) -> Void = { _ in }) {
        let release = core.withLock { core in
            update(&core)
            return core.partial.release()
        }
        release.perform()
    }

    /// Called by the receiver when the response head arrives: the server ignored our Range (200), so start over.
    func restartFromZero(_ w: Int) throws {
        guard partialFile != nil else {
            try core.withLock { core in
                guard core.machine.isCurrent(w) else { throw CancellationError() }
                core.completed = 0
                core.lastReported = -1
                core.data = Data()
            }
            return
        }
        let handle = try holdPartialFileNow(w) { core in
            core.completed = 0
            core.lastReported = -1
        }
        defer { releasePartialFile() }
        try handle?.truncate(atOffset: 0)
        try handle?.seek(toOffset: 0)
    }

    /// Appends bytes from worker `w`; throws if `w` is stale or `maxSize` is exceeded (which stops the transfer).
    func append(_ chunk: Data, from w: Int) throws {
        if case .memory(let maxSize) = destination {
            try core.withLock { core in
                guard core.machine.isCurrent(w) else { throw CancellationError() }
                let received = core.completed + Int64(chunk.count)
                if received > maxSize {
                    throw StorageError.downloadSizeExceeded(
                        total: core.total >= 0 ? core.total : received, maxSize: maxSize)
                }
                core.data.append(chunk)
                core.completed = received
            }
        } else {
            var beforeWrite: (@Sendable () -> Void)?
            let handle = try holdPartialFileNow(w) { beforeWrite = $0.partial.beforeWrite }
            do {
                beforeWrite?()
                try handle?.write(contentsOf: chunk)
            } catch {
                releasePartialFile()
                throw error
            }
            // Paused during the write: the bytes stay uncounted, and the next open cuts them off.
            releasePartialFile { core in
                if core.machine.isCurrent(w) { core.completed += Int64(chunk.count) }
            }
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

    /// Moves the partial file over the destination (replacing what was there). The worker commits first, so a
    /// pause or cancel that comes during the move is too late, as it would be after success.
    private func finishSuccess(_ w: Int) async {
        guard let partialFile, case .file(let url) = destination else {
            transition { core in
                guard core.machine.isCurrent(w) else { return .none }
                if core.total < 0 { core.total = core.completed }
                return core.machine.succeeded(worker: w)
            }
            return
        }
        let handle: FileHandle?
        do {
            handle = try holdPartialFileNow(w) { core in
                _ = core.machine.commit(worker: w)
                core.partial.handle = nil
            }
        } catch is CancellationError {
            return  // stale: the current worker or the end of the task decides the outcome
        } catch {
            fail(w, error)
            return
        }
        do {
            try handle?.close()
            let target = StorageDownloadTask.fileURL(url)
            let fm = FileManager.default
            try fm.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            if fm.fileExists(atPath: target.path) { try fm.removeItem(at: target) }
            try fm.moveItem(at: partialFile, to: target)
        } catch {
            releasePartialFile()
            fail(w, error)
            return
        }
        // Moved: there is nothing left to remove.
        releasePartialFile { $0.partial.url = nil }
        transition { core in
            if core.total < 0 { core.total = core.completed }
            return core.machine.succeeded(worker: w)
        }
    }

    private func fail(_ w: Int, _ error: any Error) {
        transition { core in
            let storageError = StorageError.transport(error, bucket: reference.bucket, object: reference.fullPath)
            core.error = storageError
            return core.machine.failed(worker: w, code: storageError.code)
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
