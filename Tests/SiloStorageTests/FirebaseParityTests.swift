import Foundation
import SiloTesting
import Synchronization
import Testing

@testable import SiloStorage

/// Errors and events exactly as FirebaseStorage hands them out: NSErrors from snapshots and
/// completion handlers on every platform, StorageError from the async API, the HTTP error under
/// `NSUnderlyingErrorKey`, no replayed start events, 100 % once, and a resume after the last byte without a request.
@Suite(.timeLimit(.minutes(3))) struct FirebaseParityTests {
    let live: Live
    init() throws { live = try Live() }
    var root: StorageReference { live.storage.reference() }

    // MARK: errors

    @Test func snapshotAndCompletionErrorsAreNSErrorsThatStillCastToStorageError() async throws {
        let ref = root.child("public/missing")
        let fromCompletion: (any Error)? = await completion { done in ref.getMetadata { _, error in done(error) } }
        let task = ref.getData(maxSize: 100) { _, _ in }
        let snapshot = await finish(task)
        for error in [fromCompletion, snapshot.error] {
            let ns = try #require(error as? NSError, "as? NSError works on Linux")
            #expect(ns.domain == "FIRStorageErrorDomain" && ns.code == -13010)
            #expect(StorageErrorCode(rawValue: ns.code) == .objectNotFound)
            #expect(StorageErrorCode(error!) == .objectNotFound)
            // And back: `as? StorageError` and `catch StorageError.x` on the NSError, as on Apple platforms.
            guard case .objectNotFound(let object, _)? = error as? StorageError else {
                Issue.record("\(String(describing: error)) does not cast to StorageError")
                continue
            }
            #expect(object == "public/missing")
            var matched = false
            do { throw error! } catch StorageError.objectNotFound { matched = true } catch {}
            #expect(matched, "catch StorageError.objectNotFound matches the NSError")
        }
    }

    @Test func asyncErrorsAreStorageErrorsThatCastToNSError() async throws {
        do {
            _ = try await root.child("public/missing").getMetadata()
            Issue.record("no error")
        } catch {
            #expect(error is StorageError)
            let thrown: (any Error)? = error  // as code that keeps errors optional writes it (and the seed does)
            let ns = try #require(thrown as? NSError)
            #expect(ns.domain == StorageErrorDomain && ns.code == StorageErrorCode.objectNotFound.rawValue)
        }
    }

    /// Firebase's payload of an HTTP error: the server's body as `data` and `ResponseBody`, bucket, object, and the
    /// HTTP error itself under `NSUnderlyingErrorKey` (domain `com.google.HTTPStatus`, the status as code, `data`).
    @Test func httpErrorsCarryTheUnderlyingHTTPError() async throws {
        let ref = root.child("private/secret")
        let result = await completion { ref.putData(Data("x".utf8), completion: $0) }
        let ns = try #require(result.failure as? NSError)
        #expect(ns.code == StorageErrorCode.unauthorized.rawValue)
        #expect(ns.userInfo["bucket"] as? String == "demo.appspot.com")
        #expect(ns.userInfo["object"] as? String == "private/secret")
        #expect(ns.userInfo["ResponseErrorCode"] as? Int == 403)
        #expect(ns.userInfo["ResponseErrorDomain"] as? String == "com.google.HTTPStatus")
        let body = try #require(ns.userInfo["data"] as? Data)
        #expect(ns.userInfo["ResponseBody"] as? String == String(decoding: body, as: UTF8.self))
        let underlying = try #require(ns.userInfo[NSUnderlyingErrorKey] as? NSError)
        #expect(underlying.domain == "com.google.HTTPStatus" && underlying.code == 403)
        #expect(underlying.userInfo["data"] as? Data == body)
    }

    /// An NSError of Firebase's domain that SiloStorage did not make (say, built by the app) still bridges.
    @Test func foreignNSErrorsOfTheDomainBridge() {
        let ns = NSError(
            domain: StorageErrorDomain, code: StorageErrorCode.unauthorized.rawValue,
            userInfo: ["bucket": "b", "object": "o", NSLocalizedDescriptionKey: "User does not have permission"])
        let error: any Error = ns
        guard case .unauthorized(let bucket, let object, _)? = error as? StorageError else {
            Issue.record("did not bridge")
            return
        }
        #expect(bucket == "b" && object == "o")
        #expect(StorageErrorCode(error) == .unauthorized)
        #expect((NSError(domain: "other", code: -13010) as any Error) as? StorageError == nil)
    }

    // MARK: events

    /// The issue's case: a 1 MiB putFile in 256 KiB chunks reports 4 progress events (Firebase: 4–6), no `.resume`
    /// (nothing is replayed to observers added right after putFile returns), and 100 % once.
    @Test func chunkedPutFileReportsEachChunkOnceAndNoStartEvents() async throws {
        live.storage.uploadChunkSizeBytes = 256 * 1024
        let source = temporaryFile("chunked-\(UUID().uuidString).bin")
        try FileManager.default.createDirectory(
            at: source.deletingLastPathComponent(), withIntermediateDirectories: true)
        try pattern(1 << 20).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let events = Recorder<(StorageTaskStatus, Int64)>()
        let task = root.child("public/chunked").putFile(from: source)
        for status in [StorageTaskStatus.resume, .progress, .pause, .success] {
            task.observe(status) { events.add(($0.status, $0.progress!.completedUnitCount)) }
        }
        #expect(await finish(task).status == .success)
        #expect(await eventually { events.all.last?.0 == .success })
        let all = events.all
        #expect(!all.contains { $0.0 == .resume || $0.0 == .pause })
        let progress = all.filter { $0.0 == .progress }.map(\.1)
        #expect(progress == [256 << 10, 512 << 10, 768 << 10, 1 << 20], "\(progress)")
    }

    @Test func smallUploadAndDownloadReport100PercentOnce() async throws {
        let ref = root.child("public/small")
        let upload = ref.putData(Data("Hello Swift World".utf8))
        let up = ProgressLog()
        up.watch(upload)
        #expect(await finish(upload).status == .success)
        #expect(await eventually { up.count == 1 })
        let download = ref.getData(maxSize: 100) { _, _ in }
        let down = ProgressLog()
        down.watch(download)
        #expect(await finish(download).status == .success)
        try await Task.sleep(for: .milliseconds(50))
        #expect(up.count == 1 && down.count == 1)
    }

    /// A download paused after its last byte arrived but before it succeeded, then resumed: it succeeds, with the
    /// bytes it has, and sends no second request (a `Range` at the size would only get 416).
    @Test func resumeAfterTheLastByteSucceedsWithoutARequest() async throws {
        let ref = root.child("public/paused-at-end")
        let bytes = pattern(300 * 1024)
        _ = try await ref.putDataAsync(bytes)
        let pauser = PauseAtEndTransport(live.recorder)
        let storage = Storage(url: "gs://demo.appspot.com", transport: pauser)
        storage.useEmulator(withHost: "127.0.0.1", port: live.server.port)
        let received = Mutex<Data?>(nil)
        let task = storage.reference(withPath: "public/paused-at-end").getData(maxSize: 1 << 20) { data, _ in
            received.withLock { $0 = data }
        }
        pauser.task.withLock { $0 = task }
        #expect(await eventually { task.snapshot.status == .pause })
        #expect(task.snapshot.progress!.completedUnitCount == Int64(bytes.count))
        let before = pauser.downloads.withLock { $0 }
        task.resume()
        let snapshot = await finish(task)
        #expect(snapshot.status == .success && snapshot.error == nil)
        #expect(await eventually { received.withLock { $0 } != nil })
        #expect(same(received.withLock { $0 } ?? Data(), bytes))
        #expect(pauser.downloads.withLock { $0 } == before, "no request after the resume")
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}

/// Pauses the download task it is given right after handing it the response's last byte (before the transfer
/// returns, so before the task can succeed); counts media GETs.
final class PauseAtEndTransport: StorageTransport {
    let inner: any StorageTransport
    let task = Mutex<StorageDownloadTask?>(nil)
    let downloads = Mutex(0)
    init(_ inner: any StorageTransport) { self.inner = inner }

    func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        downloads.withLock { $0 += 1 }
        // The test hands over the task right after the factory returns; the transfer must not finish before that.
        while task.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(1)) }
        try await inner.stream(request, timeout: timeout, receiver: AtEnd(receiver, owner: self), sent: sent)
    }

    private final class AtEnd: StorageResponseReceiver {
        let receiver: any StorageResponseReceiver
        let owner: PauseAtEndTransport
        let expected = Mutex<(length: Int64, received: Int64)>((-1, 0))
        init(_ receiver: any StorageResponseReceiver, owner: PauseAtEndTransport) {
            self.receiver = receiver
            self.owner = owner
        }
        func receive(head: StorageHTTPResponseHead) throws {
            expected.withLock { $0.length = head.header("Content-Length").flatMap(Int64.init) ?? -1 }
            try receiver.receive(head: head)
        }
        func receive(body chunk: Data) throws {
            try receiver.receive(body: chunk)
            let atEnd = expected.withLock {
                $0.received += Int64(chunk.count)
                return $0.received == $0.length
            }
            if atEnd { owner.task.withLock { $0 }?.pause() }
        }
    }
}
