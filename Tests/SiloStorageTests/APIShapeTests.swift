import Dispatch
import Foundation
import SiloStorage
import Testing

/// FirebaseStorage's public Swift API as SiloStorage offers it (docs/compatibility.md, "API parity"): every member of
/// the table, called with Firebase's labels, defaults, optionality and result types, written with explicit types so
/// a changed signature fails to compile. The calls are never made (the function is only referenced).
@Suite struct APIShapeTests {
    @Test func everyFirebaseSignatureCompiles() {
        let shape: (Storage, URL, Data) async throws -> Void = Self.apiShape
        _ = shape
    }

    static func apiShape(storage: Storage, url: URL, data: Data) async throws {
        // Storage
        let _: Storage = Storage.storage()
        let _: Storage = Storage.storage(url: "gs://bucket")
        let _: TimeInterval = storage.maxUploadRetryTime
        storage.maxUploadRetryTime = 1
        storage.maxDownloadRetryTime = 1
        storage.maxOperationRetryTime = 1
        storage.uploadChunkSizeBytes = Int64.max
        storage.callbackQueue = DispatchQueue.main
        storage.useEmulator(withHost: "localhost", port: 9199)
        let ref: StorageReference = storage.reference()
        let _: StorageReference = storage.reference(forURL: "gs://bucket/path")
        let _: StorageReference = try storage.reference(for: url)
        let _: StorageReference = storage.reference(withPath: "path")

        // StorageReference: navigation
        let _: Storage = ref.storage
        let _: String = ref.bucket + ref.fullPath + ref.name + ref.description
        let _: StorageReference = ref.root()
        let _: StorageReference? = ref.parent()
        let _: StorageReference = ref.child("a")
        let _: Bool = ref.isEqual(ref.copy())
        let _: Int = ref.hash

        // Uploads: plain, Obj-C shim, classic completion (nil allowed, no default), Result, async
        let metadata = StorageMetadata()
        let _: StorageUploadTask = ref.putData(data)
        let _: StorageUploadTask = ref.putData(data, metadata: metadata)
        let _: StorageUploadTask = ref.__putData(data)
        let _: StorageUploadTask = ref.putData(data, metadata: nil, completion: nil)
        let _: StorageUploadTask = ref.putData(data) { (_: StorageMetadata?, _: (any Error)?) in }
        let _: StorageUploadTask = ref.putData(data) { (_: Result<StorageMetadata, any Error>) in }
        let _: StorageUploadTask = ref.putFile(from: url)
        let _: StorageUploadTask = ref.putFile(from: url, metadata: metadata)
        let _: StorageUploadTask = ref.__putFile(from: url)
        let _: StorageUploadTask = ref.putFile(from: url, metadata: nil, completion: nil)
        let _: StorageUploadTask = ref.putFile(from: url) { (_: StorageMetadata?, _: (any Error)?) in }
        let _: StorageUploadTask = ref.putFile(from: url) { (_: Result<StorageMetadata, any Error>) in }
        let _: StorageMetadata = try await ref.putDataAsync(data)
        let _: StorageMetadata = try await ref.putDataAsync(data, metadata: metadata) { (_: Progress?) in }
        let _: StorageMetadata = try await ref.putFileAsync(from: url)
        let _: StorageMetadata = try await ref.putFileAsync(from: url, metadata: nil, onProgress: nil)

        // Downloads
        let _: StorageDownloadTask = ref.getData(maxSize: 1) { (_: Data?, _: (any Error)?) in }
        let _: StorageDownloadTask = ref.getData(maxSize: 1) { (_: Result<Data, any Error>) in }
        let _: Data = try await ref.data(maxSize: 1)
        let _: StorageDownloadTask = ref.write(toFile: url)
        let _: StorageDownloadTask = ref.write(toFile: url, completion: nil)
        let _: StorageDownloadTask = ref.write(toFile: url) { (_: URL?, _: (any Error)?) in }
        let _: StorageDownloadTask = ref.write(toFile: url) { (_: Result<URL, any Error>) in }
        let _: URL = try await ref.writeAsync(toFile: url)
        let _: URL = try await ref.writeAsync(toFile: url) { (_: Progress?) in }

        // Operations
        ref.downloadURL { (_: URL?, _: (any Error)?) in }
        ref.downloadURL { (_: Result<URL, any Error>) in }
        let _: URL = try await ref.downloadURL()
        ref.listAll { (_: StorageListResult?, _: (any Error)?) in }
        ref.listAll { (_: Result<StorageListResult, any Error>) in }
        let _: StorageListResult = try await ref.listAll()
        ref.list(maxResults: 1) { (_: StorageListResult?, _: (any Error)?) in }
        ref.list(maxResults: 1) { (_: Result<StorageListResult, any Error>) in }
        let _: StorageListResult = try await ref.list(maxResults: 1)
        ref.list(maxResults: 1, pageToken: "t") { (_: StorageListResult?, _: (any Error)?) in }
        ref.list(maxResults: 1, pageToken: "t") { (_: Result<StorageListResult, any Error>) in }
        let _: StorageListResult = try await ref.list(maxResults: 1, pageToken: "t")
        ref.getMetadata { (_: StorageMetadata?, _: (any Error)?) in }
        ref.getMetadata { (_: Result<StorageMetadata, any Error>) in }
        let _: StorageMetadata = try await ref.getMetadata()
        ref.updateMetadata(metadata, completion: nil)
        ref.updateMetadata(metadata) { (_: StorageMetadata?, _: (any Error)?) in }
        ref.updateMetadata(metadata) { (_: Result<StorageMetadata, any Error>) in }
        let _: StorageMetadata = try await ref.updateMetadata(metadata)  // the async form, with no annotation needed
        ref.delete(completion: nil)
        ref.delete { (_: (any Error)?) in }
        try await ref.delete()

        // StorageMetadata
        let m = StorageMetadata(dictionary: ["name": "a"])
        let _: String = m.bucket
        m.cacheControl = nil
        m.contentDisposition = nil
        m.contentEncoding = nil
        m.contentLanguage = nil
        m.contentType = nil
        m.customMetadata = nil
        let _: String? = m.md5Hash
        let _: Int64 = m.generation + m.metageneration + m.size
        let _: String? = m.name
        let _: String? = m.path
        let _: Date? = m.timeCreated ?? m.updated
        let _: [String: AnyHashable] = m.dictionaryRepresentation()
        let _: Bool = m.isFile || m.isFolder || m.isEqual(m.copy())
        let _: Int = m.hash
        let _: String = m.description

        // StorageListResult
        let list = try await ref.listAll()
        let _: [StorageReference] = list.prefixes + list.items
        let _: String? = list.pageToken
        let _: StorageListResult = list.copy()

        // Tasks and snapshots
        let upload = ref.putData(data)
        let download = ref.write(toFile: url)
        let handle: StorageHandle = upload.observe(.progress) { (_: StorageTaskSnapshot) in }
        let _: String = handle
        upload.removeObserver(withHandle: handle)
        upload.removeAllObservers(for: .success)
        upload.removeAllObservers()
        for task: any StorageTaskManagement in [upload, download] {
            task.enqueue()
            task.pause()
            task.resume()
            task.cancel()
        }
        let snapshot: StorageTaskSnapshot = download.snapshot
        let _: StorageTask = snapshot.task
        let _: StorageMetadata? = snapshot.metadata
        let _: StorageReference = snapshot.reference
        let _: Progress? = snapshot.progress
        let _: (any Error)? = snapshot.error
        let _: String = snapshot.description
        let status: StorageTaskStatus = snapshot.status
        let _: Int = status.rawValue
        let _: [StorageTaskStatus] = [.unknown, .resume, .progress, .pause, .success, .failure]

        // Errors
        let _: String = StorageErrorDomain
        let code: StorageErrorCode? = StorageErrorCode(rawValue: -13010)
        let _: [StorageErrorCode?] = [code, .unknown, .bucketNotFound, .projectNotFound, .quotaExceeded]
        let _: [StorageErrorCode] = [
            .unauthenticated, .unauthorized, .retryLimitExceeded, .nonMatchingChecksum, .downloadSizeExceeded,
            .cancelled, .invalidArgument, .bucketMismatch, .internalError, .pathError, .objectNotFound,
        ]
        let errors: [StorageError] = [
            .unknown(message: "", serverError: [:]), .objectNotFound(object: "", serverError: [:]),
            .bucketNotFound(bucket: ""), .projectNotFound(project: ""), .quotaExceeded(bucket: "", serverError: [:]),
            .unauthenticated(serverError: [:]), .unauthorized(bucket: "", object: "", serverError: [:]),
            .retryLimitExceeded, .nonMatchingChecksum, .downloadSizeExceeded(total: 0, maxSize: 0), .cancelled,
            .invalidArgument(message: ""), .internalError(message: ""), .bucketMismatch(message: ""),
            .pathError(message: ""),
        ]
        let _: String = StorageError.errorDomain
        let _: [Int] = errors.map(\.errorCode)
        let _: [[String: Any]] = errors.map(\.errorUserInfo)
    }
}
