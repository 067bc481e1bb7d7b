import Foundation
import SiloTesting
import Synchronization
import Testing

@testable import SiloStorage

/// Request/response operations against a live Silo.
/// A hung transfer fails the test after the time limit instead of hanging the run.
@Suite(.timeLimit(.minutes(3))) struct LiveOperationTests {
    let live: Live
    init() throws { live = try Live() }
    var root: StorageReference { live.storage.reference() }

    @Test func putDataGetDataRoundTrip() async throws {
        let ref = root.child("public/hello.txt")
        let bytes = Data("Hello Swift World".utf8)
        let metadata = try await ref.putDataAsync(bytes)
        #expect(metadata.size == 17 && metadata.name == "hello.txt" && metadata.path == "public/hello.txt")
        #expect(metadata.contentType == "application/octet-stream")
        #expect(metadata.isFile && metadata.bucket == "demo.appspot.com" && metadata.md5Hash?.count == 24)
        #expect(try await ref.data(maxSize: 17) == bytes)
        // The start request went to the object URL with the name repeated, chunks with PUT and no Authorization.
        let start = try #require(live.recorder.requests.first { $0.headers["X-Goog-Upload-Command"] == "start" })
        #expect(start.method == "POST")
        #expect(
            start.url.absoluteString.contains(
                "/v0/b/demo.appspot.com/o/public%2Fhello.txt?uploadType=resumable&name=public%2Fhello.txt"))
        let chunk = try #require(
            live.recorder.requests.first { $0.headers["X-Goog-Upload-Command"] == "upload, finalize" })
        #expect(chunk.method == "PUT" && chunk.headers["Authorization"] == nil)
    }

    @Test func emptyAndSpecialCharacterNames() async throws {
        let name = "public/-._~!$'()*,=:@&+; spaced ü.txt"
        let metadata = try await root.child(name).putDataAsync(Data())
        #expect(metadata.size == 0 && metadata.name == "-._~!$'()*,=:@&+; spaced ü.txt")
        #expect(try await root.child(name).data(maxSize: 10) == Data())
    }

    @Test func completionFormsRunOnTheCallbackQueue() async throws {
        let queue = DispatchQueue(label: "custom-callbacks")
        live.storage.callbackQueue = queue
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 1)
        let ref = root.child("public/cb.bin")
        let result: (StorageMetadata?, Bool) = await withCheckedContinuation { c in
            ref.putData(Data([1, 2, 3]), metadata: nil) { metadata, error in
                c.resume(returning: (metadata, DispatchQueue.getSpecific(key: key) == 1 && error == nil))
            }
        }
        #expect(result.0?.size == 3 && result.1)
        let data: Result<Data, any Error> = await withCheckedContinuation { c in
            ref.getData(maxSize: 10) { (r: Result<Data, any Error>) in c.resume(returning: r) }
        }
        #expect(try data.get() == Data([1, 2, 3]))
        let url: URL? = await withCheckedContinuation { c in ref.downloadURL { url, _ in c.resume(returning: url) } }
        #expect(url != nil)
    }

    @Test func metadataGetUpdateDelete() async throws {
        let ref = root.child("public/meta.txt")
        let uploadMetadata = StorageMetadata()
        uploadMetadata.customMetadata = ["ちかてつ": "🚇", "keep": "me"]
        uploadMetadata.contentLanguage = "en"
        _ = try await ref.putDataAsync(Data("x".utf8), metadata: uploadMetadata)
        #expect(uploadMetadata.path == "public/meta.txt" && uploadMetadata.contentType == "application/octet-stream")

        let fetched = try await ref.getMetadata()
        #expect(fetched.customMetadata == ["ちかてつ": "🚇", "keep": "me"] && fetched.contentLanguage == "en")

        // A fresh object changes only what it sets (the seed's promise).
        let fresh = StorageMetadata()
        fresh.cacheControl = "public,max-age=300"
        fresh.contentType = "image/jpeg"
        let updated = try await ref.updateMetadata(fresh)
        #expect(updated.cacheControl == "public,max-age=300" && updated.contentType == "image/jpeg")
        #expect(updated.customMetadata?["keep"] == "me" && updated.contentLanguage == "en")
        #expect(updated.metageneration > fetched.metageneration)

        // Editing a fetched object sends the diff; nil deletes.
        updated.contentLanguage = nil
        updated.customMetadata?["keep"] = nil
        updated.customMetadata?["added"] = ""
        let edited = try await ref.updateMetadata(updated)
        #expect(edited.contentLanguage == nil)
        #expect(edited.customMetadata == ["ちかてつ": "🚇", "added": ""])

        let deleteType = StorageMetadata()
        deleteType.contentType = nil
        #expect(try await ref.updateMetadata(deleteType).contentType == nil)

        try await ref.delete()
        do {
            try await ref.delete()
            Issue.record("second delete succeeded")
        } catch StorageError.objectNotFound(let object, let serverError) {
            #expect(object == "public/meta.txt")
            #expect(serverError["ResponseErrorCode"] as? Int == 404)
            #expect(
                (StorageError.objectNotFound(object: object, serverError: serverError) as NSError).localizedDescription
                    == "Object public/meta.txt does not exist.")
        }
        await #expect(throws: StorageError.self) { try await ref.getMetadata() }
    }

    @Test func downloadURLIsAPublicBearerURL() async throws {
        let ref = root.child("public/path/to/1kb")
        let bytes = pattern(1024)
        _ = try await ref.putDataAsync(bytes)
        let url = try await ref.downloadURL()
        let text = url.absoluteString
        #expect(
            text.hasPrefix(
                "http://127.0.0.1:\(live.server.port)/v0/b/demo.appspot.com/o/public%2Fpath%2Fto%2F1kb?alt=media&token="
            ))
        let response = try await testTransport().execute(StorageHTTPRequest(method: "GET", url: url), timeout: 10)
        #expect(response.status == 200 && response.body == bytes)
    }

    @Test func listPagingAndListAll() async throws {
        for name in ["list/a", "list/b", "list/prefix/c"] { _ = try await root.child(name).putDataAsync(Data()) }
        let list = root.child("list")
        let first = try await list.list(maxResults: 2)
        #expect(first.items.map(\.fullPath) == ["list/a", "list/b"] && first.prefixes.isEmpty)
        let token = try #require(first.pageToken)
        let second = try await list.list(maxResults: 2, pageToken: token)
        #expect(second.items.isEmpty && second.prefixes.map(\.fullPath) == ["list/prefix"] && second.pageToken == nil)
        let all = try await list.listAll()
        #expect(all.items.map(\.name) == ["a", "b"] && all.prefixes.map(\.name) == ["prefix"] && all.pageToken == nil)
        let atRoot = try await root.listAll()
        #expect(atRoot.prefixes.map(\.fullPath) == ["list"])
        let request = try #require(live.recorder.requests.last { $0.url.query?.contains("maxResults=2") == true })
        #expect(request.url.query == "prefix=list%2F&delimiter=%2F&maxResults=2&pageToken=\(token)")
    }

    @Test(arguments: [Int64(0), 1001, 22222])
    func listBoundsFailSynchronously(maxResults: Int64) async throws {
        let got = Mutex<(any Error)?>(nil)
        let requestsBefore = live.recorder.requests.count
        root.list(maxResults: maxResults) { _, error in got.withLock { $0 = error } }
        let error = try #require(got.withLock { $0 } as? StorageError)
        #expect(error.code == .invalidArgument)
        #expect(error.message == "Argument 'maxResults' must be between 1 and 1000 inclusive.")
        await #expect(throws: StorageError.self) { try await root.list(maxResults: maxResults, pageToken: "t") }
        #expect(live.recorder.requests.count == requestsBefore)
    }

    @Test func errorsFromTheServer() async throws {
        do {
            _ = try await root.child("private/secret").putDataAsync(Data("no".utf8))
            Issue.record("upload to private/ succeeded")
        } catch StorageError.unauthorized(let bucket, let object, let serverError) {
            #expect(bucket == "demo.appspot.com" && object == "private/secret")
            #expect(serverError["ResponseErrorCode"] as? Int == 403)
        }
        do {
            _ = try await root.child("public/missing").data(maxSize: 10)
            Issue.record("download of a missing object succeeded")
        } catch {
            #expect(StorageErrorCode(error) == .objectNotFound)
            #expect((error as NSError).code == -13010)
        }
        await #expect(throws: StorageError.self) { try await root.getMetadata() }  // root: invalidArgument
    }

    @Test func tokenProviderFailureIsUnauthenticated() async throws {
        struct NoUser: Error {}
        let failing = try Live(idToken: { throw NoUser() })
        do {
            _ = try await failing.storage.reference(withPath: "public/x").getMetadata()
            Issue.record("no error")
        } catch {
            #expect(StorageErrorCode(error) == .unauthenticated)
        }
        let signedIn = try Live(idToken: { "token-123" })
        _ = try? await signedIn.storage.reference(withPath: "public/x").getMetadata()
        #expect(signedIn.recorder.requests.last?.headers["Authorization"] == "Firebase token-123")
    }

    @Test func asyncCallsHonourTaskCancellation() async throws {
        live.recorder.delay.withLock { $0 = .seconds(30) }
        let ref = root.child("public/slow")
        let started = ContinuousClock.now
        let call = Task { try await ref.getMetadata() }
        try await Task.sleep(for: .milliseconds(50))
        call.cancel()
        await #expect(throws: StorageError.self) { try await call.value }
        // Far below the 30 s the request would take; generous because the whole package's tests share 2 cores.
        #expect(ContinuousClock.now - started < .seconds(10))
        do { _ = try await call.value } catch { #expect(StorageErrorCode(error) == .cancelled) }
    }
}
