import Dispatch
import Foundation
import SiloTesting
import Synchronization
import Testing

@testable import SiloStorage

/// Upload and download tasks against a live Silo: observers, progress, pause/resume/cancel, maxSize, files.
/// A hung transfer fails the test after the time limit instead of hanging the run.
@Suite(.timeLimit(.minutes(3))) struct LiveTransferTests {
    let live: Live
    init() throws { live = try Live() }
    var root: StorageReference { live.storage.reference() }

    @Test func putFileAndWriteToFileByteForByte() async throws {
        let source = temporaryFile("src-\(UUID().uuidString).bin")
        try FileManager.default.createDirectory(
            at: source.deletingLastPathComponent(), withIntermediateDirectories: true)
        let bytes = pattern(3 << 20 + 123)
        try bytes.write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }

        let events = Recorder<(StorageTaskStatus, Int64, Int64)>()
        let ref = root.child("public/big.bin")
        let upload = ref.putFile(from: source)
        for status in [StorageTaskStatus.progress, .success] {
            upload.observe(status) {
                events.add(($0.status, $0.progress!.completedUnitCount, $0.progress!.totalUnitCount))
            }
        }
        let done = await finish(upload)
        #expect(done.status == .success && done.metadata?.size == Int64(bytes.count))
        #expect(done.metadata?.contentType == "application/octet-stream")  // .bin is not in the table
        try await Task.sleep(for: .milliseconds(50))
        #expect(events.all.last?.0 == .success)
        let completed = events.all.map(\.1)
        #expect(completed == completed.sorted() && completed.last == Int64(bytes.count))
        #expect(events.all.allSatisfy { $0.2 == Int64(bytes.count) })

        let target = temporaryFile("dir-\(UUID().uuidString)/nested/out.bin")
        try Data("old".utf8).write(to: temporaryFile("placeholder"))
        let order = Recorder<String>()
        let download = ref.write(toFile: target) { url, error in
            order.add("completion \(url == target) \(error == nil)")
        }
        download.observe(.success) { _ in order.add("success") }
        _ = await finish(download)
        #expect(await eventually { order.all.count == 2 })
        #expect(order.all == ["success", "completion true true"])
        #expect(try Data(contentsOf: target) == bytes)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: target.deletingLastPathComponent().path) == ["out.bin"])
        #expect(try await ref.writeAsync(toFile: target) == target)
        try? FileManager.default.removeItem(at: target.deletingLastPathComponent().deletingLastPathComponent())
    }

    @Test func maxSizeStopsTheTransfer() async throws {
        let ref = root.child("public/1mb")
        _ = try await ref.putDataAsync(pattern(1 << 20))
        let failures = Recorder<Int>()
        let task = ref.getData(maxSize: 1024) { data, error in
            failures.add(data == nil ? StorageErrorCode(error!).rawValue : 0)
        }
        task.observe(.failure) { failures.add(($0.error as? StorageError)?.code.rawValue ?? 0) }
        let snapshot = await finish(task)
        guard case .downloadSizeExceeded(let total, let maxSize)? = snapshot.error as? StorageError else {
            Issue.record("wrong error \(String(describing: snapshot.error))")
            return
        }
        #expect(total == 1 << 20 && maxSize == 1024)
        #expect(await eventually { failures.all.count == 2 })
        #expect(failures.all == [-13032, -13032])
        #expect(try await ref.data(maxSize: 1 << 20).count == 1 << 20)  // exactly maxSize is fine
    }

    @Test func pausedFileDownloadResumesWithRange() async throws {
        let bytes = pattern(24 << 20)
        let ref = root.child("public/24mb")
        _ = try await ref.putDataAsync(bytes)
        let target = temporaryFile("resume-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: target) }

        let statuses = Recorder<(StorageTaskStatus, Int64)>()
        let task = ref.write(toFile: target)
        let paused = Mutex(false)
        task.observe(.progress) { snapshot in
            statuses.add((.progress, snapshot.progress!.completedUnitCount))
            if snapshot.progress!.completedUnitCount > 1 << 20,
                !paused.withLock({
                    let was = $0
                    $0 = true
                    return was
                })
            {
                (snapshot.task as? StorageObservableTask)?.observe(.pause) {
                    statuses.add(($0.status, $0.progress!.completedUnitCount))
                }
                (snapshot.task as? StorageDownloadTask)?.pause()
            }
        }
        task.observe(.resume) { statuses.add(($0.status, $0.progress!.completedUnitCount)) }
        #expect(await eventually { task.snapshot.status == .pause })
        #expect(task.snapshot.description == "<State: Paused>")
        let atPause = task.snapshot.progress!.completedUnitCount
        try await Task.sleep(for: .milliseconds(100))
        #expect(task.snapshot.progress!.completedUnitCount == atPause)  // nothing moves while paused
        task.resume()
        let done = await finish(task)
        #expect(done.status == .success)
        #expect(try Data(contentsOf: target) == bytes)
        let downloads = live.recorder.requests.filter { $0.url.query == "alt=media" }
        #expect(downloads.count == 2)
        #expect(downloads.last?.headers["Range"] == "bytes=\(atPause)-" && atPause > 0 && atPause < Int64(bytes.count))
        let progress = statuses.all.filter { $0.0 == .progress }.map(\.1)
        #expect(progress == progress.sorted())
        #expect(statuses.all.contains { $0.0 == .pause } && statuses.all.contains { $0.0 == .resume })
    }

    /// The partial file's I/O runs outside the task's lock: while a worker is stuck inside a write, the task still
    /// pauses and answers, and the write the pause overtook neither counts nor ends up in the file the resumed worker
    /// completes.
    @Test func aStuckFileWriteLeavesTheTaskFree() async throws {
        let bytes = pattern(4 << 20)
        let ref = root.child("public/stuck-write")
        _ = try await ref.putDataAsync(bytes)
        let target = temporaryFile("stuck-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: target) }

        let task = StorageDownloadTask(reference: ref, destination: .file(target))
        let inWrite = Mutex(false)
        let proceed = DispatchSemaphore(value: 0)
        task.core.withLock { core in
            core.partial.beforeWrite = {
                let first = inWrite.withLock { entered in
                    defer { entered = true }
                    return !entered
                }
                if first { proceed.wait() }
            }
        }
        task.enqueue()
        #expect(await eventually { inWrite.withLock { $0 } })
        // Asked from another thread, so that a write under the lock fails this expectation instead of hanging here.
        let answered = Mutex<StorageTaskStatus?>(nil)
        Thread {
            task.pause()
            let status = task.snapshot.status
            answered.withLock { $0 = status }
        }.start()
        #expect(await eventually { answered.withLock { $0 } == .pause })
        proceed.signal()
        #expect(task.snapshot.progress?.completedUnitCount == 0)
        task.resume()
        let done = await finish(task)
        #expect(done.status == .success)
        #expect(try Data(contentsOf: target) == bytes)
        let downloads = live.recorder.requests.filter { $0.url.query == "alt=media" }
        #expect(downloads.count == 2 && downloads.last?.headers["Range"] == nil)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: target.deletingLastPathComponent().path)
                .allSatisfy { !$0.hasPrefix(".\(target.lastPathComponent)") })
    }

    @Test func chunkedUploadPausesAndResumesFromTheServerOffset() async throws {
        let chunked = try Live(chunkSize: 1)  // rounded up to the server's granularity
        let bytes = pattern(2 << 20 + 5)
        let ref = chunked.storage.reference(withPath: "public/chunked")
        let task = ref.putData(bytes)
        let paused = Mutex(false)
        let progressCount = Recorder<Int64>()
        task.observe(.progress) { snapshot in
            progressCount.add(snapshot.progress!.completedUnitCount)
            if snapshot.progress!.completedUnitCount > 0,
                !paused.withLock({
                    let was = $0
                    $0 = true
                    return was
                })
            {
                (snapshot.task as? StorageUploadTask)?.pause()
            }
        }
        #expect(await eventually { task.snapshot.status == .pause })
        task.resume()
        let done = await finish(task)
        #expect(done.status == .success && done.metadata?.size == Int64(bytes.count))
        #expect(try await ref.data(maxSize: 3 << 20) == bytes)
        let commands = chunked.recorder.requests.compactMap { $0.headers["X-Goog-Upload-Command"] }
        #expect(commands.first == "start" && commands.contains("query") && commands.last == "upload, finalize")
        #expect(commands.filter { $0 == "upload" }.count >= 3)
        let offsets = progressCount.all
        #expect(offsets == offsets.sorted())
    }

    @Test func cancelDownloadAndUpload() async throws {
        let ref = root.child("public/cancel")
        _ = try await ref.putDataAsync(pattern(4 << 20))
        let target = temporaryFile("cancel-\(UUID().uuidString).bin")
        let completion = Recorder<String>()
        let download = ref.write(toFile: target) { _, error in
            completion.add((error as? StorageError)?.message ?? "none")
        }
        download.cancel()
        let snapshot = await finish(download)
        #expect(snapshot.status == .failure && StorageErrorCode(snapshot.error!) == .cancelled)
        #expect(await eventually { completion.all == ["User cancelled the upload/download."] })
        #expect(!FileManager.default.fileExists(atPath: target.path))

        // Slow requests and small chunks keep the upload running while the first progress handler cancels it.
        live.recorder.delay.withLock { $0 = .milliseconds(30) }
        live.storage.uploadChunkSizeBytes = 256 * 1024
        let failures = Recorder<StorageErrorCode>()
        let upload = root.child("public/cancelled-upload").putData(pattern(1 << 20))
        upload.observe(.failure) { failures.add(StorageErrorCode($0.error!)) }
        upload.observe(.progress) { ($0.task as? StorageUploadTask)?.cancel() }
        _ = await finish(upload)
        try await Task.sleep(for: .milliseconds(100))
        #expect(failures.all == [.cancelled])
        upload.resume()  // a finished task stays finished
        #expect(upload.snapshot.status == .failure)
    }

    @Test func asyncUploadCancelledByItsSwiftTask() async throws {
        let slow = try Live(chunkSize: 256 * 1024)
        slow.recorder.delay.withLock { $0 = .milliseconds(50) }
        let ref = slow.storage.reference(withPath: "public/async-cancel")
        let upload = Task { try await ref.putDataAsync(pattern(4 << 20)) }
        try await Task.sleep(for: .milliseconds(120))
        upload.cancel()
        do {
            _ = try await upload.value
            Issue.record("upload finished despite cancellation")
        } catch {
            #expect(StorageErrorCode(error) == .cancelled)
        }
    }

    @Test func asyncProgressAndLateObservers() async throws {
        let ref = root.child("public/progress")
        let seen = Recorder<Int64>()
        _ = try await ref.putDataAsync(pattern(1 << 20), onProgress: { seen.add($0?.completedUnitCount ?? -1) })
        #expect(await eventually { seen.all.last == 1 << 20 })
        let task = ref.getData(maxSize: 2 << 20) { _, _ in }
        _ = await finish(task)
        let replayed = Recorder<StorageTaskStatus>()
        task.observe(.success) { replayed.add($0.status) }  // late: replayed once
        task.observe(.progress) { replayed.add($0.status) }  // not replayed after success
        #expect(await eventually { replayed.all == [.success] })
    }

    @Test func putFileRejectsWhatIsNotARegularFile() async throws {
        for url in [
            URL(fileURLWithPath: NSTemporaryDirectory()), URL(fileURLWithPath: "/nonexistent/file.txt"),
            URL(string: "bad-url")!,
        ] {
            do {
                _ = try await root.child("public/nofile").putFileAsync(from: url)
                Issue.record("uploaded \(url)")
            } catch let error as StorageError {
                #expect(error.code == .unknown)
                #expect(
                    error.message
                        == "File at URL: \(url.absoluteString) is not reachable. Ensure file URL is not a directory, symbolic link, or invalid url."
                )
            }
        }
    }
}
