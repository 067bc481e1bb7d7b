import Foundation
import SiloTestStores
import SiloTesting
import Synchronization
import Testing

import protocol SiloCore.AccessPolicy
import struct SiloCore.AccessRequest

@testable import SiloStorage

/// Every error code the SDK can produce: HTTP statuses through a stub transport, and the
/// client-side codes through a live server. `retryLimitExceeded` is in RetryTests. Never produced, as in Firebase:
/// `bucketNotFound`, `projectNotFound`, `nonMatchingChecksum`, `internalError` (only on an impossible nil/nil).
/// A hung transfer fails the test after the time limit instead of hanging the run.
@Suite(.timeLimit(.minutes(3))) struct ErrorCodeTests {
    static let notJSON = Data("<html>not json</html>".utf8)
    static let errorBody = Data(#"{"error":{"code":0,"message":"stub"}}"#.utf8)

    static func stubbed(_ status: Int, _ body: Data = errorBody) -> Storage {
        let storage = Storage(url: "gs://demo.appspot.com", transport: StubTransport(status: status, body: body))
        storage.useEmulator(withHost: "127.0.0.1", port: 9)
        storage.maxOperationRetryTime = 0
        storage.maxDownloadRetryTime = 0
        return storage
    }

    /// Status → (code, message) for an object reference `dir/file.txt`.
    @Test(arguments: [
        (400, StorageErrorCode.unknown, "Unknown 400 error from backend"),
        (
            401, .unauthenticated,
            "User is not authenticated, please authenticate using Firebase Authentication and try again."
        ),
        (402, .quotaExceeded, "Quota for bucket demo.appspot.com exceeded, please view quota on firebase.google.com."),
        (403, .unauthorized, "User does not have permission to access gs://demo.appspot.com/dir/file.txt."),
        (404, .objectNotFound, "Object dir/file.txt does not exist."),
        (409, .unknown, "Unexpected 409 code from backend"),
        (412, .unknown, "Unexpected 412 code from backend"),
        (416, .unknown, "Unexpected 416 code from backend"),
        (500, .unknown, "Unexpected 500 code from backend"),
    ])
    func httpStatusMapping(status: Int, code: StorageErrorCode, message: String) async throws {
        let ref = Self.stubbed(status).reference(withPath: "dir/file.txt")
        for operation in ["getMetadata", "delete", "updateMetadata", "data"] {
            do {
                switch operation {
                case "getMetadata": _ = try await ref.getMetadata()
                case "delete": try await ref.delete()
                case "updateMetadata": _ = try await ref.updateMetadata(StorageMetadata())
                default: _ = try await ref.data(maxSize: 100)
                }
                Issue.record("\(operation) \(status) succeeded")
            } catch let error as StorageError {
                #expect(error.code == code, "\(operation) \(status)")
                #expect(error.message == message, "\(operation) \(status)")
                #expect((error as NSError).code == code.rawValue)
                #expect((error as NSError).domain == StorageErrorDomain)
                #expect(error.serverError["ResponseErrorCode"] as? Int == status)
                #expect(error.serverError["bucket"] as? String == "demo.appspot.com")
                #expect(error.serverError["object"] as? String == "dir/file.txt")
            }
        }
    }

    /// A list of the root has no object: Firebase's placeholder name goes into the payload.
    @Test func rootErrorsUseThePlaceholderObject() async throws {
        let root403 = Self.stubbed(403).reference()
        do {
            _ = try await root403.listAll()
            Issue.record("no error")
        } catch StorageError.unauthorized(let bucket, let object, _) {
            #expect(bucket == "demo.appspot.com" && object == "<object-entity-internal-error>")
        }
        do {
            _ = try await Self.stubbed(404).reference().list(maxResults: 5)
            Issue.record("no error")
        } catch StorageError.objectNotFound(let object, _) {
            #expect(object == "<object-entity-internal-error>")
        }
    }

    @Test func unparsable200BodyIsUnknown() async throws {
        let storage = Self.stubbed(200, Self.notJSON)
        let ref = storage.reference(withPath: "dir/file.txt")
        for operation in ["getMetadata", "updateMetadata", "downloadURL", "list"] {
            do {
                switch operation {
                case "getMetadata": _ = try await ref.getMetadata()
                case "updateMetadata": _ = try await ref.updateMetadata(StorageMetadata())
                case "downloadURL": _ = try await ref.downloadURL()
                default: _ = try await storage.reference().listAll()
                }
                Issue.record("\(operation) accepted a non-JSON body")
            } catch {
                #expect(StorageErrorCode(error) == .unknown, "\(operation)")
                #expect(
                    (error as? StorageError)?.message == "Invalid data returned from the server: <html>not json</html>",
                    "\(operation)")
            }
        }
    }

    // MARK: client-side codes, against a live server

    @Test func clientSideCodesAgainstALiveServer() async throws {
        let live = try Live()
        let storage = live.storage
        let ref = storage.reference(withPath: "public/codes")
        _ = try await ref.putDataAsync(pattern(4096))

        // downloadSizeExceeded
        do {
            _ = try await ref.data(maxSize: 100)
            Issue.record("maxSize ignored")
        } catch StorageError.downloadSizeExceeded(let total, let maxSize) {
            #expect(total == 4096 && maxSize == 100)
        }

        // cancelled: task.cancel() on a download and on an upload
        let download = ref.getData(maxSize: 10_000) { _, _ in }
        download.cancel()
        #expect(StorageErrorCode(await finish(download).error!) == .cancelled)
        let upload = storage.reference(withPath: "public/cancelled").putData(pattern(10))
        upload.cancel()
        #expect(StorageErrorCode(await finish(upload).error!) == .cancelled)

        // invalidArgument: object operations on the root, and list bounds
        let root = storage.reference()
        let requestsBefore = live.recorder.requests.count
        var rootCodes: [StorageErrorCode] = []
        func code(_ body: () async throws -> Void) async {
            do {
                try await body()
                rootCodes.append(.unknown)
            } catch { rootCodes.append(StorageErrorCode(error)) }
        }
        await code { _ = try await root.getMetadata() }
        await code { _ = try await root.updateMetadata(StorageMetadata()) }
        await code { try await root.delete() }
        await code { _ = try await root.downloadURL() }
        await code { _ = try await root.data(maxSize: 10) }
        await code { _ = try await root.putDataAsync(Data("x".utf8)) }
        await code { _ = try await root.list(maxResults: 0) }
        #expect(rootCodes == Array(repeating: .invalidArgument, count: 7))
        let writeRoot = root.write(toFile: temporaryFile()) { _, _ in }
        #expect(StorageErrorCode(await finish(writeRoot).error!) == .invalidArgument)
        #expect(live.recorder.requests.count == requestsBefore)  // rejected before any request

        // bucketMismatch / pathError from reference(for:)
        #expect(throws: StorageError.self) { try storage.reference(for: URL(string: "gs://other-bucket/x")!) }
        do {
            _ = try storage.reference(for: URL(string: "gs://other-bucket/x")!)
        } catch { #expect(StorageErrorCode(error) == .bucketMismatch) }
        for bad in ["ftp://demo.appspot.com/x", "http://127.0.0.1/v1/b/demo.appspot.com/o/x", "gs:///x"] {
            do {
                _ = try storage.reference(for: URL(string: bad)!)
                Issue.record("\(bad) parsed")
            } catch { #expect(StorageErrorCode(error) == .pathError, "\(bad)") }
        }

        // objectNotFound from the server
        let missing = storage.reference(withPath: "public/missing")
        rootCodes = []
        await code { _ = try await missing.getMetadata() }
        await code { try await missing.delete() }
        await code { _ = try await missing.data(maxSize: 10) }
        await code { _ = try await missing.updateMetadata(StorageMetadata()) }
        #expect(rootCodes == Array(repeating: .objectNotFound, count: 4))
    }

    struct DenyAll: AccessPolicy {
        func allows(_ request: AccessRequest) -> Bool { false }
    }

    @Test func unauthorizedFromADenyingPolicy() async throws {
        let server = try TestServer(policy: DenyAll())
        defer { server.shutdown() }
        let storage = Storage(url: "gs://demo.appspot.com", transport: testTransport())
        storage.useEmulator(withHost: "127.0.0.1", port: server.port)
        let ref = storage.reference(withPath: "anything/here")
        var codes: [StorageErrorCode] = []
        for operation in 0..<5 {
            do {
                switch operation {
                case 0: _ = try await ref.putDataAsync(Data("x".utf8))
                case 1: _ = try await ref.getMetadata()
                case 2: _ = try await ref.data(maxSize: 10)
                case 3: try await ref.delete()
                default: _ = try await storage.reference().listAll()
                }
                codes.append(.unknown)
            } catch StorageError.unauthorized(let bucket, let object, let serverError) {
                codes.append(.unauthorized)
                #expect(bucket == "demo.appspot.com")
                #expect(object == (operation == 4 ? "<object-entity-internal-error>" : "anything/here"))
                #expect(serverError["ResponseErrorCode"] as? Int == 403)
            } catch {
                codes.append(StorageErrorCode(error))
            }
        }
        #expect(codes == Array(repeating: .unauthorized, count: 5))
    }
}
