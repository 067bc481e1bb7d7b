import Dispatch
import Foundation
import SiloStorage
import SiloTesting
import Synchronization
import Testing

/// What FirebaseStorage's own Swift integration tests check (firebase-ios-sdk FirebaseStorage/Tests/Integration:
/// StorageIntegration.swift's `StorageResultTests`, StorageAsyncAwait.swift, StoragePOSIXErrorTest.swift), written
/// again for SiloStorage against a live Silo holding Firebase's test project (FirebaseProject). One test per Firebase
/// test, same name, same calls, same expectations of results, errors, events and metadata; Tests/SiloStorageTests/
/// README.md maps them and says where the harness differs. Serialized, as XCTest runs them: several share objects
/// (`ios/public/fileToDelete`, `1mb`, `1mb2`).
@Suite(.serialized, .timeLimit(.minutes(3))) struct FirebaseIntegrationTests {
    static var bucket: String { FirebaseProject.bucket }

    /// Firebase's `StorageResultTests`: the completion-handler and `Result` forms.
    @Suite struct StorageResultTests {
        let project: FirebaseProject
        let storage: Storage

        init() async throws {
            project = try await FirebaseProject.get()
            storage = project.makeStorage()
        }

        @Test func testGetMetadata() async throws {
            let ref = storage.reference().child("ios/public/1mb")
            let result = await completion { ref.getMetadata(completion: $0) }
            #expect(try result.get().size == 1 << 20)
        }

        @Test func testUpdateMetadata() async throws {
            let meta = StorageMetadata()
            meta.contentType = "lol/custom"
            meta.customMetadata = ["lol": "custom metadata is neat", "ちかてつ": "🚇", "shinkansen": "新幹線"]
            let ref = storage.reference(withPath: "ios/public/1mb")
            let metadata = try await completion { ref.updateMetadata(meta, completion: $0) }.get()
            #expect(meta.contentType == metadata.contentType)
            #expect(meta.customMetadata!["lol"] == metadata.customMetadata!["lol"])
            #expect(meta.customMetadata!["ちかてつ"] == metadata.customMetadata!["ちかてつ"])
            #expect(meta.customMetadata!["shinkansen"] == metadata.customMetadata!["shinkansen"])
        }

        @Test func testDelete() async throws {
            let ref = storage.reference(withPath: "ios/public/fileToDelete")
            _ = try await completion { ref.putData(helloData, completion: $0) }.get()
            let first: (any Error)? = await completion { done in ref.delete { done($0) } }
            #expect(first == nil, "Error should be nil")
            // The next delete fails, which shows the first one worked.
            let second: (any Error)? = await completion { done in ref.delete { done($0) } }
            let nsError = try #require(second as? NSError)
            #expect(nsError.domain == StorageErrorDomain)
            #expect(nsError.code == StorageErrorCode.objectNotFound.rawValue)
            #expect(nsError.localizedDescription == "Object ios/public/fileToDelete does not exist.")
            #expect(nsError.userInfo["object"] as? String == "ios/public/fileToDelete")
            #expect(nsError.userInfo["ResponseErrorCode"] as? Int == 404)
            #expect(nsError.userInfo["ResponseErrorDomain"] as? String == "com.google.HTTPStatus")
            #expect(nsError.userInfo["bucket"] as? String == FirebaseIntegrationTests.bucket)
        }

        @Test func testDeleteWithNilCompletion() async throws {
            let ref = storage.reference(withPath: "ios/public/fileToDelete")
            _ = try await completion { ref.putData(helloData, completion: $0) }.get()
            ref.delete(completion: nil)
            // Firebase only checks that the call is accepted; here the object also goes away.
            var gone = false
            for _ in 0..<500 where !gone {
                gone = await errorCode { try await ref.getMetadata() } == .objectNotFound
                if !gone { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(gone)
        }

        @Test func testSimplePutData() async throws {
            let ref = storage.reference(withPath: "ios/public/testBytesUpload")
            let result = await completion { ref.putData(helloData, completion: $0) }
            #expect(try result.get().size == 17)
        }

        @Test func testNoDeadlocks() async throws {
            // A second instance without a default bucket, used from inside the first one's completion.
            let storage2 = Storage(url: "")
            storage2.useEmulator(withHost: "127.0.0.1", port: project.port)
            let ref = storage.reference(withPath: "ios/public/testBytesUpload")
            let inner = await completion { (done: @escaping @Sendable (Bool) -> Void) in
                ref.putData(helloData) { (_: Result<StorageMetadata, any Error>) in
                    let ref2 = storage2.reference(withPath: "ios/public/testBytesUpload")
                    ref2.putData(helloData) { (_: Result<StorageMetadata, any Error>) in done(true) }
                }
            }
            #expect(inner)
        }

        @Test func testSimplePutSpecialCharacter() async throws {
            let ref = storage.reference(withPath: "ios/public/-._~!$'()*,=:@&+;")
            let metadata = try await completion { ref.putData(helloData, completion: $0) }.get()
            #expect(metadata.path == "ios/public/-._~!$'()*,=:@&+;")  // test:
        }

        @Test func testSimplePutDataInBackgroundQueue() async throws {
            let ref = storage.reference(withPath: "ios/public/testBytesUpload")
            let result = await completion { (done: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void) in
                DispatchQueue.global(qos: .background).async { ref.putData(helloData, completion: done) }
            }
            _ = try result.get()
        }

        @Test func testSimplePutEmptyData() async throws {
            let ref = storage.reference(withPath: "ios/public/testSimplePutEmptyData")
            let result = await completion { ref.putData(Data(), completion: $0) }
            #expect(try result.get().size == 0)
        }

        @Test func testSimplePutDataUnauthorized() async throws {
            let file = "ios/private/secretfile.txt"
            let ref = storage.reference(withPath: file)
            let result = await completion { ref.putData(helloData, completion: $0) }
            switch result {
            case .success: Issue.record("Unexpected success from unauthorized putData")
            case .failure(let error as StorageError):
                guard case .unauthorized(let bucket, let object, let serverError) = error else {
                    Issue.record("Failed with unexpected error: \(error)")
                    return
                }
                #expect(bucket == FirebaseIntegrationTests.bucket)
                #expect(object == file)
                #expect(serverError["ResponseErrorCode"] as? Int == 403)
            case .failure(let error): Issue.record("Failed with unexpected error: \(error)")
            }
        }

        @Test func testSimplePutDataUnauthorizedThrow() async throws {
            let ref = storage.reference(withPath: "ios/private/secretfile.txt")
            let result = await completion { ref.putData(helloData, completion: $0) }
            #expect(throws: (any Error).self) { try result.get() }
        }

        @Test func testSimplePutFile() async throws {
            let ref = storage.reference(withPath: "ios/public/testSimplePutFile")
            let fileURL = try scratchDirectory().appendingPathComponent("hello.txt")
            try helloData.write(to: fileURL, options: .atomic)
            let completed = Mutex<Result<StorageMetadata, any Error>?>(nil)
            let task = ref.putFile(from: fileURL) { result in completed.withLock { $0 = result } }
            let events = ProgressLog()
            events.watch(task)
            let success = await successSnapshot(task)
            #expect(success.description == "<State: Success>")
            #expect(await eventually { completed.withLock { $0 } != nil })
            _ = try completed.withLock { $0 }!.get()
            events.expectWellFormed()
        }

        @Test func testPutFileLimitedChunk() async throws {
            try await putFileInChunks(chunkSize: 256_000, allowed: 4...)
        }

        @Test func testPutFileTinyChunk() async throws {
            // Chunk sizes below the granularity are rounded up to 256 KiB: the same as the previous test.
            try await putFileInChunks(chunkSize: 1, allowed: 4...6)
        }

        /// A 1 MiB putFile in chunks: progress counted by an observer, checked in the completion.
        func putFileInChunks(chunkSize: Int64, allowed: some RangeExpression<Int> & Sendable) async throws {
            storage.uploadChunkSizeBytes = chunkSize
            let ref = storage.reference(withPath: "ios/public/testPutFilePauseResume")
            let fileURL = try scratchDirectory().appendingPathComponent("LargePutFile.txt")
            try FirebaseProject.oneMiB.write(to: fileURL, options: .atomic)
            let events = ProgressLog()
            let atCompletion = Mutex<(count: Int, succeeded: Bool)?>(nil)
            let task = ref.putFile(from: fileURL) { (result: Result<StorageMetadata, any Error>) in
                atCompletion.withLock { $0 = (events.count, (try? result.get()) != nil) }
            }
            events.watch(task)
            #expect(await successSnapshot(task).description == "<State: Success>")
            #expect(await eventually { atCompletion.withLock { $0 } != nil })
            let (count, succeeded) = try #require(atCompletion.withLock { $0 })
            #expect(succeeded)
            #expect(allowed.contains(count), "progress events: \(count)")
            events.expectWellFormed()
        }

        @Test func testAttemptToUploadDirectoryShouldFail() async throws {
            // Firebase's resource `HomeImprovement.numbers` is a directory (a Numbers package).
            let fileURL = try scratchDirectory().appendingPathComponent("HomeImprovement.numbers")
            try FileManager.default.createDirectory(at: fileURL, withIntermediateDirectories: true)
            try Data("About".utf8).write(to: fileURL.appendingPathComponent("About.txt"))
            let ref = storage.reference(withPath: "ios/public/HomeImprovement.numbers")
            let result = await completion { ref.putFile(from: fileURL, completion: $0) }
            #expect(throws: (any Error).self) { try result.get() }
        }

        @Test func testPutFileWithSpecialCharacters() async throws {
            let fileName = "hello&+@_ .txt"
            let ref = storage.reference(withPath: "ios/public/" + fileName)
            let fileURL = try scratchDirectory().appendingPathComponent("hello.txt")
            try helloData.write(to: fileURL, options: .atomic)
            let metadata = try await completion { ref.putFile(from: fileURL, completion: $0) }.get()
            #expect(fileName == metadata.name)
            _ = try await completion { ref.getMetadata(completion: $0) }.get()
        }

        @Test func testSimplePutDataNoMetadata() async throws {
            let ref = storage.reference(withPath: "ios/public/testSimplePutDataNoMetadata")
            _ = try await completion { ref.putData(helloData, completion: $0) }.get()
        }

        @Test func testSimplePutFileNoMetadata() async throws {
            let ref = storage.reference(withPath: "ios/public/hello&+@_ .txt")
            let fileURL = try scratchDirectory().appendingPathComponent("hello.txt")
            try helloData.write(to: fileURL, options: .atomic)
            _ = try await completion { ref.putFile(from: fileURL, completion: $0) }.get()
        }

        @Test func testSimpleGetData() async throws {
            // maxSize exactly the object's size is allowed.
            let ref = storage.reference(withPath: "ios/public/1mb")
            let data = try await completion { ref.getData(maxSize: 1024 * 1024, completion: $0) }.get()
            #expect(same(data, FirebaseProject.oneMiB))
        }

        @Test func testSimpleGetDataInBackgroundQueue() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb")
            let result = await completion { (done: @escaping @Sendable (Result<Data, any Error>) -> Void) in
                DispatchQueue.global(qos: .background).async { ref.getData(maxSize: 1024 * 1024, completion: done) }
            }
            #expect(try result.get().count == 1 << 20)
        }

        @Test func testSimpleGetDataWithCustomCallbackQueue() async throws {
            let callbackQueueLabel = "customCallbackQueue"
            let callbackQueueKey = DispatchSpecificKey<String>()
            let callbackQueue = DispatchQueue(label: callbackQueueLabel)
            callbackQueue.setSpecific(key: callbackQueueKey, value: callbackQueueLabel)
            storage.callbackQueue = callbackQueue

            let ref = storage.reference(withPath: "ios/public/1mb")
            let (succeeded, onMain, label) = await completion {
                (done: @escaping @Sendable ((Bool, Bool, String?)) -> Void) in
                ref.getData(maxSize: 1024 * 1024) { (result: Result<Data, any Error>) in
                    done(
                        (
                            (try? result.get()) != nil, Thread.isMainThread,
                            DispatchQueue.getSpecific(key: callbackQueueKey)
                        ))
                }
            }
            #expect(succeeded)
            #expect(!onMain)
            #expect(label == callbackQueueLabel)
        }

        @Test func testSimpleGetDataTooSmall() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb")
            let maxSize: Int64 = 1024
            let result = await completion { ref.getData(maxSize: maxSize, completion: $0) }
            switch result {
            case .success: Issue.record("Unexpected success from getData too small")
            case .failure(let error as StorageError):
                guard case .downloadSizeExceeded(let total, let max) = error else {
                    Issue.record("Failed with unexpected error: \(error)")
                    return
                }
                #expect(total == 1_048_576)
                #expect(max == maxSize)
            case .failure(let error): Issue.record("Failed with unexpected error: \(error)")
            }
        }

        @Test func testSimpleGetDownloadURL() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb")
            // Firebase: "https://firebasestorage.googleapis.com:443/v0/b/{bucket}/o/{path}?alt=media&token={token}";
            // here the emulator host the instance was pointed at.
            let downloadURLPrefix =
                "http://127.0.0.1:\(project.port)/v0/b/ios-opensource-samples"
                + ".appspot.com/o/ios%2Fpublic%2F1mb?alt=media&token"
            let downloadURL = try await completion { ref.downloadURL(completion: $0) }.get()
            #expect(downloadURL.absoluteString.hasPrefix(downloadURLPrefix), "\(downloadURL)")
        }

        @Test func testSimpleGetFile() async throws {
            let ref = storage.reference(withPath: "ios/public/helloworld" + #function)
            let fileURL = try scratchDirectory().appendingPathComponent(#function + "hello.txt")
            _ = try await completion { ref.putData(helloData, completion: $0) }.get()
            let task = ref.write(toFile: fileURL)
            let errors = Recorder<String>()
            task.observe(.progress) { snapshot in
                if snapshot.error != nil { errors.add("progress error") }
                if snapshot.progress == nil { errors.add("missing progress") }
            }
            task.observe(.failure) { snapshot in errors.add("failure \(String(describing: snapshot.error))") }
            let success = await successSnapshot(task)
            #expect(try String(contentsOf: fileURL, encoding: .utf8) == "Hello Swift World")
            #expect(success.description == "<State: Success>")
            #expect(errors.all.isEmpty)
        }

        @Test func testCancelErrorCode() async throws {
            let ref = storage.reference(withPath: "ios/public/helloworld" + #function)
            let fileURL = try scratchDirectory().appendingPathComponent(#function + "hello.txt")
            _ = try await completion { ref.putData(helloData, completion: $0) }.get()
            let task = ref.write(toFile: fileURL)
            let succeeded = Mutex(false)
            task.observe(.success) { _ in succeeded.withLock { $0 = true } }
            let failure = await completion { (done: @escaping @Sendable (StorageTaskSnapshot) -> Void) in
                task.observe(.failure, handler: done)
                task.cancel()
            }
            let error = try #require(failure.error)
            #expect(error.localizedDescription == "User cancelled the upload/download.")
            #expect((error as NSError).code == StorageErrorCode.cancelled.rawValue)
            #expect(!succeeded.withLock { $0 })
        }

        @Test func testCancelUpload() async throws {
            let ref = storage.reference(withPath: "ios/public/helloworld" + #function)
            let task = ref.putData(Data(count: 1024 * 1024))
            let failures = Recorder<StorageTaskSnapshot>()
            task.observe(.failure) { failures.add($0) }
            task.observe(.progress) { _ in task.cancel() }
            #expect(await eventually { !failures.all.isEmpty })
            try? await Task.sleep(for: .milliseconds(200))
            #expect(failures.all.count == 1)  // once
            let error = try #require(failures.all.first?.error)
            #expect(error.localizedDescription == "User cancelled the upload/download.")
            #expect((error as NSError).code == StorageErrorCode.cancelled.rawValue)
        }

        @Test func testUpdateMetadata2() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb")
            let metadata = StorageMetadata()
            metadata.cacheControl = "cache-control"
            metadata.contentDisposition = "content-disposition"
            metadata.contentEncoding = "gzip"
            metadata.contentLanguage = "de"
            metadata.contentType = "content-type-a"
            metadata.customMetadata = ["a": "b"]

            let (first, error): (StorageMetadata?, (any Error)?) = await completion { done in
                ref.updateMetadata(metadata) { updated, error in done((updated, error)) }
            }
            #expect(error == nil, "Error should be nil")
            let updatedMetadata = try #require(first, "Metadata is nil")
            expectMetadata(updatedMetadata, contentType: "content-type-a", customMetadata: ["a": "b"])

            let metadata2 = updatedMetadata
            metadata2.contentType = "content-type-b"
            metadata2.customMetadata = ["a": "b", "c": "d"]
            let second = try await completion { ref.updateMetadata(metadata2, completion: $0) }.get()
            expectMetadata(second, contentType: "content-type-b", customMetadata: ["a": "b", "c": "d"])

            metadata2.cacheControl = nil
            metadata2.contentDisposition = nil
            metadata2.contentEncoding = nil
            metadata2.contentLanguage = nil
            metadata2.contentType = nil
            metadata2.customMetadata = nil
            let third = try await completion { ref.updateMetadata(metadata2, completion: $0) }.get()
            expectMetadataCleared(third)  // test: what the Obj-C variant checks after the same calls
        }

        @Test func testResumeGetFile() async throws {
            try await resumeGetFile(onBackgroundQueue: false)
        }

        @Test func testResumeGetFileInBackgroundQueue() async throws {
            try await resumeGetFile(onBackgroundQueue: true)
        }

        /// A 1 MiB write(toFile:) paused once past 256 KiB (from the observer, or from a background queue it hands
        /// to) and resumed from the `.pause` observer: paused and resumed once, progress never goes back, success.
        func resumeGetFile(onBackgroundQueue: Bool) async throws {
            let storage = project.makeStorage(paced: true)
            let ref = storage.reference().child("ios/public/1mb")
            let fileURL = try scratchDirectory().appendingPathComponent("hello.txt")
            let task = ref.write(toFile: fileURL)
            let state = Mutex((downloaded: Int64(0), resumeAt: Int64(256 * 1024), regressions: 0, pauses: 0))
            let descriptions = Recorder<String>()
            task.observe(.progress) { snapshot in
                descriptions.add(snapshot.description)
                guard let completed = snapshot.progress?.completedUnitCount else { return }
                let pause = state.withLock { s -> Bool in
                    if completed < s.downloaded { s.regressions += 1 }
                    s.downloaded = completed
                    guard completed > s.resumeAt else { return false }
                    s.resumeAt = .max
                    return true
                }
                if pause {
                    if onBackgroundQueue {
                        DispatchQueue.global(qos: .background).async { task.pause() }
                    } else {
                        task.pause()
                    }
                }
            }
            task.observe(.pause) { snapshot in
                descriptions.add(snapshot.description)
                state.withLock { $0.pauses += 1 }
                if onBackgroundQueue {
                    DispatchQueue.global(qos: .background).async { task.resume() }
                } else {
                    task.resume()
                }
            }
            let success = await successSnapshot(task)
            #expect(success.description == "<State: Success>")
            let final = state.withLock { $0 }
            #expect(final.resumeAt == .max)
            #expect(final.pauses == 1)
            #expect(final.regressions == 0)
            #expect(descriptions.all.allSatisfy { $0.contains("State: Progress") || $0 == "<State: Paused>" })
            #expect(same(try Data(contentsOf: fileURL), FirebaseProject.oneMiB))  // test:
        }

        @Test func testPagedListFiles() async throws {
            let ref = storage.reference(withPath: "ios/public/list")
            let listResult = try await completion { ref.list(maxResults: 2, completion: $0) }.get()
            #expect(listResult.items == [ref.child("a"), ref.child("b")])
            #expect(listResult.prefixes == [])
            let pageToken = try #require(listResult.pageToken, "pageToken should not be nil")
            let page2 = try await completion { ref.list(maxResults: 2, pageToken: pageToken, completion: $0) }.get()
            #expect(page2.items == [])
            #expect(page2.prefixes == [ref.child("prefix")])
            #expect(page2.pageToken == nil, "pageToken should be nil")
        }

        @Test func testPagedListFilesTooManyError() async throws {
            let ref = storage.reference(withPath: "ios/public/list")
            let result = await completion { ref.list(maxResults: 22222, completion: $0) }
            switch result {
            case .success: Issue.record("Unexpected success from list")
            case .failure(let error as StorageError):
                guard case .invalidArgument(let message) = error else {
                    Issue.record("Failed with unexpected error: \(error)")
                    return
                }
                #expect(message == "Argument 'maxResults' must be between 1 and 1000 inclusive.")
            case .failure(let error): Issue.record("Failed with unexpected error: \(error)")
            }
        }

        @Test func testListAllFiles() async throws {
            let ref = storage.reference(withPath: "ios/public/list")
            let listResult = try await completion { ref.listAll(completion: $0) }.get()
            #expect(listResult.items == [ref.child("a"), ref.child("b")])
            #expect(listResult.prefixes == [ref.child("prefix")])
            #expect(listResult.pageToken == nil, "pageToken should be nil")
        }
    }
}

// MARK: shared checks

/// The upload/download progress the Firebase tests watch: every `.progress` description starts with
/// `<State: Progress` (or `<State: Resume`), progress is present and never goes down.
final class ProgressLog: Sendable {
    private let state = Mutex((count: 0, last: Int64(-1), problems: [String]()))

    func watch(_ task: StorageObservableTask) {
        task.observe(.progress) { snapshot in
            self.state.withLock { s in
                s.count += 1
                let description = snapshot.description
                if !(description.hasPrefix("<State: Progress") || description.hasPrefix("<State: Resume")) {
                    s.problems.append("description \(description)")
                }
                guard let progress = snapshot.progress else {
                    s.problems.append("no progress")
                    return
                }
                if progress.completedUnitCount < s.last { s.problems.append("progress went down") }
                s.last = progress.completedUnitCount
            }
        }
    }

    var count: Int { state.withLock { $0.count } }

    func expectWellFormed(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(state.withLock { $0.problems } == [], sourceLocation: sourceLocation)
    }
}

/// The `.success` snapshot of a task (a failure is recorded as an issue and returned instead).
func successSnapshot(_ task: StorageObservableTask, sourceLocation: SourceLocation = #_sourceLocation) async
    -> StorageTaskSnapshot
{
    let snapshot = await finish(task)
    #expect(snapshot.status == .success, "\(snapshot)", sourceLocation: sourceLocation)
    return snapshot
}

/// Firebase's `assertMetadata`: the four set fields, the content type, an MD5 of 24 base64 characters, custom keys.
func expectMetadata(
    _ actual: StorageMetadata, contentType: String, customMetadata: [String: String],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(actual.cacheControl == "cache-control", sourceLocation: sourceLocation)
    #expect(actual.contentDisposition == "content-disposition", sourceLocation: sourceLocation)
    #expect(actual.contentEncoding == "gzip", sourceLocation: sourceLocation)
    #expect(actual.contentLanguage == "de", sourceLocation: sourceLocation)
    #expect(actual.contentType == contentType, sourceLocation: sourceLocation)
    #expect(actual.md5Hash?.count == 24, sourceLocation: sourceLocation)
    for (key, value) in customMetadata {
        #expect(actual.customMetadata?[key] == value, sourceLocation: sourceLocation)
    }
}

/// Firebase's `assertMetadataNil` (defined beside `testUpdateMetadata2`; the Obj-C variant of the test applies it):
/// every writable field gone, `contentEncoding` back to `identity`, the MD5 still there.
func expectMetadataCleared(_ actual: StorageMetadata, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(actual.cacheControl == nil, sourceLocation: sourceLocation)
    #expect(actual.contentDisposition == nil, sourceLocation: sourceLocation)
    #expect(actual.contentEncoding == "identity", sourceLocation: sourceLocation)
    #expect(actual.contentLanguage == nil, sourceLocation: sourceLocation)
    #expect(actual.contentType == nil, sourceLocation: sourceLocation)
    #expect(actual.md5Hash?.count == 24, sourceLocation: sourceLocation)
    #expect(actual.customMetadata == nil, sourceLocation: sourceLocation)
}

/// The code an async call fails with, or nil when it succeeds.
func errorCode(_ body: () async throws -> some Any) async -> StorageErrorCode? {
    do {
        _ = try await body()
        return nil
    } catch {
        return StorageErrorCode(error)
    }
}
