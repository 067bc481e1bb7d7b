public import Foundation

/// Completion-handler and `Result` forms of the request/response operations. Callbacks run on
/// `storage.callbackQueue`. Closures are `@Sendable` because they cross to that queue.
extension StorageReference {
    func run<T: Sendable>(
        _ operation: @escaping @Sendable () async throws(StorageError) -> T,
        then deliver: @escaping @Sendable (Result<T, StorageError>) -> Void
    ) {
        let storage = self.storage
        Task {
            let result: Result<T, StorageError>
            do throws(StorageError) { result = .success(try await operation()) } catch { result = .failure(error) }
            storage.callback { deliver(result) }
        }
    }

    public func getMetadata(completion: @escaping @Sendable (StorageMetadata?, (any Error)?) -> Void) {
        run(fetchMetadata) { completion($0.value, $0.error) }
    }
    public func getMetadata(completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void) {
        run(fetchMetadata) { completion($0.erased) }
    }

    /// No default for `completion` (as in Firebase), so `try await ref.updateMetadata(m)` always means the async form,
    /// even in top-level code.
    public func updateMetadata(
        _ metadata: StorageMetadata, completion: (@Sendable (StorageMetadata?, (any Error)?) -> Void)?
    ) {
        run({ () async throws(StorageError) in try await self.patchMetadata(metadata) }) {
            completion?($0.value, $0.error)
        }
    }
    public func updateMetadata(
        _ metadata: StorageMetadata, completion: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void
    ) {
        run({ () async throws(StorageError) in try await self.patchMetadata(metadata) }) { completion($0.erased) }
    }

    public func delete(completion: (@Sendable ((any Error)?) -> Void)?) {
        run(deleteObject) { completion?($0.error) }
    }

    public func downloadURL(completion: @escaping @Sendable (URL?, (any Error)?) -> Void) {
        run(fetchDownloadURL) { completion($0.value, $0.error) }
    }
    public func downloadURL(completion: @escaping @Sendable (Result<URL, any Error>) -> Void) {
        run(fetchDownloadURL) { completion($0.erased) }
    }

    public func listAll(completion: @escaping @Sendable (StorageListResult?, (any Error)?) -> Void) {
        run(listEverything) { completion($0.value, $0.error) }
    }
    public func listAll(completion: @escaping @Sendable (Result<StorageListResult, any Error>) -> Void) {
        run(listEverything) { completion($0.erased) }
    }

    /// An out-of-range `maxResults` fails synchronously on the caller's thread, without a request (as Firebase).
    public func list(maxResults: Int64, completion: @escaping @Sendable (StorageListResult?, (any Error)?) -> Void) {
        list(maxResults: maxResults, pageToken: nil) { completion($0.value, $0.error) }
    }
    public func list(maxResults: Int64, completion: @escaping @Sendable (Result<StorageListResult, any Error>) -> Void)
    {
        list(maxResults: maxResults, pageToken: nil) { completion($0.erased) }
    }
    public func list(
        maxResults: Int64, pageToken: String, completion: @escaping @Sendable (StorageListResult?, (any Error)?) -> Void
    ) {
        list(maxResults: maxResults, pageToken: pageToken as String?) { completion($0.value, $0.error) }
    }
    public func list(
        maxResults: Int64, pageToken: String,
        completion: @escaping @Sendable (Result<StorageListResult, any Error>) -> Void
    ) {
        list(maxResults: maxResults, pageToken: pageToken as String?) { completion($0.erased) }
    }

    private func list(
        maxResults: Int64, pageToken: String?,
        deliver: @escaping @Sendable (Result<StorageListResult, StorageError>) -> Void
    ) {
        do {
            try StorageReference.validate(maxResults: maxResults)
        } catch {
            deliver(.failure(error))
            return
        }
        run(
            { () async throws(StorageError) in try await self.listPage(maxResults: maxResults, pageToken: pageToken) },
            then: deliver)
    }
}

/// Completion handlers get the `NSError` Firebase hands out (see StorageError+NSError.swift).
extension Result where Failure == StorageError {
    var value: Success? { try? get() }
    var error: (any Error)? {
        if case .failure(let e) = self { return e.nsError }
        return nil
    }
    var erased: Result<Success, any Error> { mapError { $0.nsError } }
}
