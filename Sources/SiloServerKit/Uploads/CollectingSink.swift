package import SiloCore
package import SiloHTTP

/// Collects a small body (JSON) up to a bound, then hands it to `complete`. A larger body is refused with 413
/// without reading the rest, and one declared larger before its first byte (``BoundedBodySink``).
package final class CollectingSink: BoundedBodySink {
    private var body: [UInt8] = []
    private let limit: Int
    private let complete: ([UInt8]) -> HTTPResponse
    private let refusal: (StorageError) -> HTTPResponse

    package init(
        limit: Int, refuse: @escaping (StorageError) -> HTTPResponse, complete: @escaping ([UInt8]) -> HTTPResponse
    ) {
        self.limit = limit
        self.complete = complete
        self.refusal = refuse
    }

    package var maxBodyBytes: Int64 { Int64(limit) }
    package func refuse(_ error: StorageError) -> HTTPResponse { refusal(error) }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard body.count + chunk.count <= limit else {
            return refuse(StorageError(.payloadTooLarge, "request body exceeds \(limit) bytes"))
        }
        body.append(contentsOf: chunk)
        return nil
    }

    package func finish() -> HTTPResponse { complete(body) }
    package func abort() {}

    /// Parsed or collected from the transport's buffers: nothing to lend.
    package func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
}
