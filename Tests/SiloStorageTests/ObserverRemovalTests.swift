import Foundation
import SiloTesting
import Synchronization
import Testing

@testable import SiloStorage

/// Observer removal during real transfers, and replay/removal after completion.
/// Removal from inside a handler runs on the callback queue while the transfer keeps queuing events; a removed
/// handler must not see any of them.
/// A hung transfer fails the test after the time limit instead of hanging the run.
@Suite(.timeLimit(.minutes(3))) struct ObserverRemovalTests {
    /// Counts calls per label.
    final class Calls: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func hit(_ label: String) { counts.withLock { $0[label, default: 0] += 1 } }
        subscript(_ label: String) -> Int { counts.withLock { $0[label, default: 0] } }
    }

    @Test func uploadRemoveObserverAndRemoveAllForStatus() async throws {
        let live = try Live(chunkSize: 256 * 1024)
        live.recorder.delay.withLock { $0 = .milliseconds(20) }
        let calls = Calls()
        let upload = live.storage.reference(withPath: "public/observed-upload").putData(pattern(4 << 20))
        let selfRemoving = Mutex<StorageHandle?>(nil)
        let handle = upload.observe(.progress) { _ in
            calls.hit("a")
            // Block the callback queue while the upload keeps producing progress, then remove this handler.
            Thread.sleep(forTimeInterval: 0.3)
            if let h = selfRemoving.withLock({ $0 }) { upload.removeObserver(withHandle: h) }
        }
        selfRemoving.withLock { $0 = handle }
        upload.observe(.progress) { _ in calls.hit("b") }
        let removedSuccess = upload.observe(.success) { _ in calls.hit("removed-success") }
        upload.observe(.success) { _ in calls.hit("success") }
        upload.observe(.pause) { _ in calls.hit("pause") }
        upload.removeObserver(withHandle: removedSuccess)
        upload.removeObserver(withHandle: "no-such-handle")  // ignored
        upload.removeAllObservers(for: .pause)
        #expect(await eventually { upload.snapshot.progress!.completedUnitCount > 0 })
        upload.pause()
        #expect(upload.snapshot.status == .pause)
        // Registered while paused: no replay, so exactly the one `.resume` event of resume().
        upload.observe(.resume) { _ in calls.hit("resume") }
        upload.resume()
        let final = await finish(upload)
        #expect(final.status == .success)
        #expect(await eventually { calls["success"] == 1 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(calls["a"] == 1)
        #expect(calls["b"] >= 2)
        #expect(calls["removed-success"] == 0)
        #expect(calls["pause"] == 0)
        #expect(calls["resume"] == 1)
        #expect(calls["success"] == 1)
    }

    @Test func downloadRemoveAllObserversFromAHandler() async throws {
        let live = try Live()
        let ref = live.storage.reference(withPath: "public/observed-download")
        _ = try await ref.putDataAsync(pattern(4 << 20))
        let calls = Calls()
        let done = Mutex(false)
        let task = ref.getData(maxSize: 8 << 20) { data, _ in
            #expect(data?.count == 4 << 20)
            done.withLock { $0 = true }
        }
        task.observe(.progress) { _ in
            calls.hit("progress")
            if calls["progress"] == 1 {
                // The download finishes while this handler sleeps; everything it queued must be dropped.
                Thread.sleep(forTimeInterval: 0.3)
                task.removeAllObservers()
            }
        }
        task.observe(.progress) { _ in calls.hit("progress-2") }
        task.observe(.success) { _ in calls.hit("success") }
        #expect(await eventually { done.withLock { $0 } })  // the completion handler is not an observer
        try await Task.sleep(for: .milliseconds(200))
        #expect(task.snapshot.status == .success)
        #expect(calls["progress"] == 1)
        #expect(calls["progress-2"] == 0)  // removed before its turn in the first event
        #expect(calls["success"] == 0)
    }

    @Test func downloadRemoveAllObserversForProgressKeepsSuccess() async throws {
        let live = try Live()
        let ref = live.storage.reference(withPath: "public/observed-download-2")
        _ = try await ref.putDataAsync(pattern(4 << 20))
        let calls = Calls()
        let target = temporaryFile("observed-\(UUID().uuidString).bin")
        let task = ref.write(toFile: target)
        task.observe(.progress) { _ in
            calls.hit("progress")
            Thread.sleep(forTimeInterval: 0.3)
            task.removeAllObservers(for: .progress)
        }
        task.observe(.progress) { _ in calls.hit("progress-2") }
        task.observe(.success) { _ in calls.hit("success") }
        _ = await finish(task)
        #expect(await eventually { calls["success"] == 1 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(calls["progress"] == 1)
        #expect(calls["progress-2"] == 0)
        #expect(calls["success"] == 1)
        try? FileManager.default.removeItem(at: target)
    }

    @Test func lateObserversReplayOnceAndRemovalAfterCompletionIsHarmless() async throws {
        let live = try Live()
        let ref = live.storage.reference(withPath: "public/late")
        let calls = Calls()

        let upload = ref.putData(pattern(1000))
        #expect(await finish(upload).status == .success)
        let success = upload.observe(.success) { _ in calls.hit("upload-success") }
        upload.observe(.failure) { _ in calls.hit("upload-failure") }  // not in that state: no replay
        upload.observe(.progress) { _ in calls.hit("upload-progress") }  // not replayed after success
        #expect(await eventually { calls["upload-success"] == 1 })
        upload.removeObserver(withHandle: success)
        upload.removeAllObservers(for: .success)
        upload.removeAllObservers()

        let failed = live.storage.reference(withPath: "public/missing").getData(maxSize: 10) { _, _ in }
        #expect(await finish(failed).status == .failure)
        failed.observe(.failure) { snapshot in
            calls.hit("download-failure")
            #expect(StorageErrorCode(snapshot.error!) == .objectNotFound)
        }
        failed.observe(.success) { _ in calls.hit("download-success") }
        #expect(await eventually { calls["download-failure"] == 1 })
        failed.removeAllObservers()

        // A cancelled task does not replay `.failure` (Firebase's rule).
        let cancelled = ref.getData(maxSize: 2000) { _, _ in }
        cancelled.cancel()
        #expect(await finish(cancelled).status == .failure)
        cancelled.observe(.failure) { _ in calls.hit("cancelled-failure") }

        try await Task.sleep(for: .milliseconds(300))
        #expect(calls["upload-success"] == 1)
        #expect(calls["upload-failure"] == 0 && calls["upload-progress"] == 0)
        #expect(calls["download-failure"] == 1 && calls["download-success"] == 0)
        #expect(calls["cancelled-failure"] == 0)
    }
}
