import SiloCore
import SiloHTTP

/// Collects a small body (JSON) up to a bound, then hands it to `complete`. A larger body is refused with 413
/// without reading the rest.
final class CollectingSink: RequestBodySink {
    private var body: [UInt8] = []
    private let limit: Int
    private let complete: ([UInt8]) -> HTTPResponse
    private let refuse: (StorageError) -> HTTPResponse

    init(limit: Int, refuse: @escaping (StorageError) -> HTTPResponse, complete: @escaping ([UInt8]) -> HTTPResponse) {
        self.limit = limit
        self.complete = complete
        self.refuse = refuse
    }

    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard body.count + chunk.count <= limit else {
            return refuse(StorageError(.payloadTooLarge, "request body exceeds \(limit) bytes"))
        }
        body.append(contentsOf: chunk)
        return nil
    }

    func finish() -> HTTPResponse { complete(body) }
    func abort() {}

    /// Parsed or collected from the transport's buffers: nothing to lend.
    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
}
