package import SiloCore
package import SiloHTTP
package import SiloWire

/// A `multipart/related` upload: metadata JSON then media, streamed through ``MultipartParser`` into a blob.
package final class MultipartUploadSink: BoundedBodySink {
    /// What the body said, handed to the protocol front end to commit and answer.
    package struct Parts {
        package var changes: MetadataChanges?
        package var mediaContentType: String?
        var ingest: BlobIngest
        package var blob: IngestedBlob
        package var summary: BlobSummary { blob.summary }
    }

    private var parser: MultipartParser
    /// Called once the metadata part is parsed, with it and the media part's type, before any media byte.
    private let makeIngest: (MetadataChanges?, String?) throws -> BlobIngest
    private let commit: (Parts) throws -> HTTPResponse
    private let fail: (any Error) -> HTTPResponse
    private var changes: MetadataChanges?
    private var mediaContentType: String?
    private var blob = StreamedBodyBlob()
    /// The metadata part, the largest object, and the framing around them.
    package let maxBodyBytes: Int64

    package init(
        boundary: String, maxMetadataBytes: Int, maxObjectSize: Int64,
        makeIngest: @escaping (MetadataChanges?, String?) throws -> BlobIngest,
        fail: @escaping (any Error) -> HTTPResponse, commit: @escaping (Parts) throws -> HTTPResponse
    ) {
        parser = MultipartParser(boundary: boundary, maxMetadataBytes: maxMetadataBytes)
        let bound = maxObjectSize.addingReportingOverflow(
            Int64(maxMetadataBytes) + DeclaredLength.multipartFraming(parts: 2))
        maxBodyBytes = bound.overflow ? .max : bound.partialValue
        self.makeIngest = makeIngest
        self.commit = commit
        self.fail = fail
    }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        do {
            try parser.feed(chunk) { event in
                switch event {
                case .metadata(let bytes):
                    changes = try UploadFields.parseChanges(bytes)
                case .mediaStart(let contentType):
                    mediaContentType = contentType
                    blob.start(try makeIngest(changes, contentType))
                case .mediaBytes(let bytes):
                    try blob.ingest?.write(bytes)
                case .field, .fileStart:
                    // Form mode only; this parser is in related mode.
                    break
                }
            }
            return nil
        } catch {
            return failed(error)
        }
    }

    package func refuse(_ error: StorageError) -> HTTPResponse { fail(error) }

    package func finish() -> HTTPResponse {
        do {
            try parser.finish()
            let missing = StorageError(.invalidArgument, "multipart body has no media part")
            return try blob.finish(missing: missing) { ingest, stored in
                try commit(Parts(changes: changes, mediaContentType: mediaContentType, ingest: ingest, blob: stored))
            }
        } catch {
            return failed(error)
        }
    }

    package func abort() { blob.abandon() }

    /// Parsed or collected from the transport's buffers: nothing to lend.
    package func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }

    private func failed(_ error: any Error) -> HTTPResponse {
        blob.fail()
        return fail(error)
    }
}
