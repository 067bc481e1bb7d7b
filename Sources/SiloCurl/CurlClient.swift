import Foundation
import SiloCore

/// A small HTTP client on libcurl easy handles. Each request runs a blocking `curl_easy_perform` on a thread of its
/// own (one handle per request, freed when it ends), so a slow sink applies real backpressure to the socket and
/// no Swift concurrency thread ever blocks.
public final class CurlClient: Sendable {
    private let pool: CurlHandlePool?

    /// With `reuseConnections`, finished easy handles are kept (up to `maxIdleConnections`) with their open
    /// connections, and later requests to the same host reuse them (HTTP keep-alive) instead of connecting again.
    /// Without it, every request has a fresh handle and connection, closed when it ends.
    public init(reuseConnections: Bool = false, maxIdleConnections: Int = 16) {
        pool = reuseConnections ? CurlHandlePool(capacity: maxIdleConnections) : nil
    }

    /// Runs `request`, streaming the response into `handler`, and returns the final status. Cancelling the calling
    /// Task aborts the transfer and throws `CancellationError` at once; the handler gets nothing more after that.
    @discardableResult
    public func perform(_ request: CurlRequest, handler: any CurlResponseHandler) async throws -> Int {
        let control = CurlTransferControl()
        let completion = OnceContinuation<Int>()
        let pool = self.pool
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                guard completion.attach(continuation) else { return }
                let thread = Thread {
                    completion.finish(
                        Result { try CurlTransfer.run(request, handler: handler, control: control, pool: pool) })
                }
                thread.name = "silo.curl"
                thread.start()
            }
        } onCancel: {
            control.abort()
            completion.finish(.failure(CancellationError()))
        }
    }

    /// Runs `request` on the calling thread until it ends. `control.abort()` from another thread stops it.
    @discardableResult
    public func performBlocking(
        _ request: CurlRequest, handler: any CurlResponseHandler, control: CurlTransferControl = CurlTransferControl()
    ) throws -> Int {
        try CurlTransfer.run(request, handler: handler, control: control, pool: pool)
    }
}
