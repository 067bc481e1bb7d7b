package import SiloCore
package import SiloHTTP

/// A raw body that becomes the object's bytes (v0 media upload; GCS `uploadType=media`).
package final class MediaUploadSink: BoundedBodySink {
    private let ingest: BlobIngest
    private let commit: (BlobIngest, IngestedBlob) throws -> HTTPResponse
    private let fail: (any Error) -> HTTPResponse
    private var failed = false

    package init(
        ingest: BlobIngest, fail: @escaping (any Error) -> HTTPResponse,
        commit: @escaping (BlobIngest, IngestedBlob) throws -> HTTPResponse
    ) {
        self.ingest = ingest
        self.commit = commit
        self.fail = fail
    }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        do {
            try ingest.write(chunk)
            return nil
        } catch {
            failed = true
            ingest.discard()
            return fail(error)
        }
    }

    package func finish() -> HTTPResponse {
        do {
            return try commit(ingest, try ingest.finish())
        } catch {
            ingest.discard()
            return fail(error)
        }
    }

    package func abort() { if !failed { ingest.discard() } }

    package var maxBodyBytes: Int64 { ingest.maxBytes }
    package func refuse(_ error: StorageError) -> HTTPResponse { fail(error) }

    package func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { failed ? nil : ingest.freeSpace }
}
