public import Foundation
import Synchronization

/// Uploads and downloads. Each factory returns a task that has already started; completion handlers run on the
/// callback queue after the task's own `.success`/`.failure` observers.
extension StorageReference {
    // MARK: uploads

    /// Uploads `uploadData`; observe the returned task for progress and the result.
    @discardableResult
    public func putData(_ uploadData: Data, metadata: StorageMetadata? = nil) -> StorageUploadTask {
        putData(uploadData, metadata: metadata, completion: nil)
    }

    /// `putData(_:metadata:)` under the name Firebase's Objective-C shim has in Swift.
    @discardableResult
    public func __putData(_ uploadData: Data) -> StorageUploadTask {
        putData(uploadData, metadata: nil, completion: nil)
    }

    /// Uploads `uploadData`. The passed metadata gets this reference's `path`/`name`, and `contentType`
    /// `application/octet-stream` when unset (Firebase mutates it the same way). As in Firebase, `completion` has no
    /// default: leave it out and `putData(_:metadata:)` is called.
    @discardableResult
    public func putData(
        _ uploadData: Data, metadata: StorageMetadata? = nil,
        completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)?
    ) -> StorageUploadTask {
        upload(.data(uploadData), metadata: metadata, contentType: nil) { snapshot in
            completion?(snapshot.error == nil ? snapshot.metadata : nil, snapshot.error)
        }
    }

    @discardableResult
    public func putData(
        _ uploadData: Data, metadata: StorageMetadata? = nil,
        completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void
    ) -> StorageUploadTask {
        upload(.data(uploadData), metadata: metadata, contentType: nil) { completion(Self.result($0)) }
    }

    /// Uploads the regular file at `fileURL`; observe the returned task for progress and the result.
    @discardableResult
    public func putFile(from fileURL: URL, metadata: StorageMetadata? = nil) -> StorageUploadTask {
        putFile(from: fileURL, metadata: metadata, completion: nil)
    }

    /// `putFile(from:metadata:)` under the name Firebase's Objective-C shim has in Swift.
    @discardableResult
    public func __putFile(from fileURL: URL) -> StorageUploadTask {
        putFile(from: fileURL, metadata: nil, completion: nil)
    }

    /// Uploads the regular file at `fileURL`; `contentType` defaults to the MIME type of its extension.
    @discardableResult
    public func putFile(
        from fileURL: URL, metadata: StorageMetadata? = nil,
        completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)?
    ) -> StorageUploadTask {
        upload(.file(fileURL), metadata: metadata, contentType: MIMETypes.type(forPathExtension: fileURL.pathExtension))
        {
            snapshot in
            completion?(snapshot.error == nil ? snapshot.metadata : nil, snapshot.error)
        }
    }

    @discardableResult
    public func putFile(
        from fileURL: URL, metadata: StorageMetadata? = nil,
        completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void
    ) -> StorageUploadTask {
        upload(.file(fileURL), metadata: metadata, contentType: MIMETypes.type(forPathExtension: fileURL.pathExtension))
        {
            completion(Self.result($0))
        }
    }

    static func result(_ snapshot: StorageTaskSnapshot) -> Result<StorageMetadata, any Error> {
        if let error = snapshot.error { return .failure(error) }
        guard let metadata = snapshot.metadata else {
            return .failure(StorageError.internalError(message: "Upload succeeded without metadata").nsError)
        }
        return .success(metadata)
    }

    func upload(
        _ source: StorageUploadTask.Source, metadata: StorageMetadata?, contentType: String?,
        completion: @escaping @Sendable (StorageTaskSnapshot) -> Void
    ) -> StorageUploadTask {
        let metadata = metadata ?? StorageMetadata()
        metadata.path = fullPath
        if metadata.contentType == nil {
            // Not an explicit assignment: the caller did not ask to delete anything.
            metadata.state.withLock { $0.fields.contentType = contentType ?? MIMETypes.fallback }
        }
        let task = StorageUploadTask(reference: self, source: source, metadata: metadata)
        task.setCompletion(completion)
        task.enqueueTask()
        return task
    }

    // MARK: downloads

    /// Downloads into memory. More than `maxSize` bytes (announced or received) stops the transfer and fails with
    /// `StorageError.downloadSizeExceeded`.
    @discardableResult
    public func getData(maxSize: Int64, completion: @escaping @Sendable (Data?, (any Error)?) -> Void)
        -> StorageDownloadTask
    {
        download(.memory(maxSize: maxSize)) { task, snapshot in
            if let error = snapshot.error { completion(nil, error) } else { completion(task.takeData(), nil) }
        }
    }

    @discardableResult
    public func getData(maxSize: Int64, completion: @escaping @Sendable (Result<Data, any Error>) -> Void)
        -> StorageDownloadTask
    {
        download(.memory(maxSize: maxSize)) { task, snapshot in
            if let error = snapshot.error { completion(.failure(error)) } else { completion(.success(task.takeData())) }
        }
    }

    /// Streams the object into `fileURL`; observe the returned task for progress and the result.
    @discardableResult
    public func write(toFile fileURL: URL) -> StorageDownloadTask {
        write(toFile: fileURL, completion: nil)
    }

    /// Streams the object into `fileURL` (replacing it on success; intermediate directories are created). Memory use
    /// does not grow with the object size.
    @discardableResult
    public func write(toFile fileURL: URL, completion: (@Sendable (URL?, (any Error)?) -> Void)?)
        -> StorageDownloadTask
    {
        download(.file(fileURL)) { _, snapshot in
            completion?(snapshot.error == nil ? fileURL : nil, snapshot.error)
        }
    }

    @discardableResult
    public func write(toFile fileURL: URL, completion: @escaping @Sendable (Result<URL, any Error>) -> Void)
        -> StorageDownloadTask
    {
        download(.file(fileURL)) { _, snapshot in
            if let error = snapshot.error { completion(.failure(error)) } else { completion(.success(fileURL)) }
        }
    }

    func download(
        _ destination: StorageDownloadTask.Destination,
        completion: @escaping @Sendable (StorageDownloadTask, StorageTaskSnapshot) -> Void
    ) -> StorageDownloadTask {
        let task = StorageDownloadTask(reference: self, destination: destination)
        task.setCompletion { [unowned task] snapshot in completion(task, snapshot) }
        task.enqueueTask()
        return task
    }

    // MARK: async forms

    /// Like `putData`, but cancelling the calling Swift Task cancels the upload (Firebase ignores it).
    public func putDataAsync(
        _ uploadData: Data, metadata: StorageMetadata? = nil, onProgress: (@Sendable (Progress?) -> Void)? = nil
    ) async throws -> StorageMetadata {
        try await awaitTask(onProgress: onProgress) { done in
            self.upload(.data(uploadData), metadata: metadata, contentType: nil) { done(Self.result($0)) }
        }
    }

    public func putFileAsync(
        from url: URL, metadata: StorageMetadata? = nil, onProgress: (@Sendable (Progress?) -> Void)? = nil
    ) async throws -> StorageMetadata {
        try await awaitTask(onProgress: onProgress) { done in
            self.upload(
                .file(url), metadata: metadata, contentType: MIMETypes.type(forPathExtension: url.pathExtension)
            ) {
                done(Self.result($0))
            }
        }
    }

    public func data(maxSize: Int64) async throws -> Data {
        try await awaitTask(onProgress: nil) { done in
            self.download(.memory(maxSize: maxSize)) { task, snapshot in
                done(snapshot.error.map { .failure($0) } ?? .success(task.takeData()))
            }
        }
    }

    public func writeAsync(toFile fileURL: URL, onProgress: (@Sendable (Progress?) -> Void)? = nil) async throws -> URL
    {
        try await awaitTask(onProgress: onProgress) { done in
            self.download(.file(fileURL)) { _, snapshot in
                done(snapshot.error.map { .failure($0) } ?? .success(fileURL))
            }
        }
    }

    /// Starts a task whose completion resumes the caller; Swift Task cancellation cancels the storage task.
    private func awaitTask<T: Sendable>(
        onProgress: (@Sendable (Progress?) -> Void)?,
        start: (@escaping @Sendable (Result<T, any Error>) -> Void) -> StorageObservableTask
    ) async throws -> T {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let task = start { continuation.resume(with: $0.mapError(StorageError.unwrapped)) }
                if let onProgress { task.observe(.progress) { onProgress($0.progress) } }
                box.set(task)
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// Holds the task for the cancellation handler, which may run before the task exists.
private final class TaskBox: Sendable {
    private let state = Mutex<(task: StorageObservableTask?, cancelled: Bool)>((nil, false))

    func set(_ task: StorageObservableTask) {
        let cancelled = state.withLock {
            $0.task = task
            return $0.cancelled
        }
        if cancelled { task.cancelTask() }
    }

    func cancel() {
        let task = state.withLock {
            $0.cancelled = true
            return $0.task
        }
        task?.cancelTask()
    }
}
