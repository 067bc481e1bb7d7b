import SiloHTTP

/// A body sink whose answer is changed on the way out, early or final: the pipeline adds CORS headers and the failure
/// log line; the fault handler (`--test-faults`) its staged faults.
final class DecoratingSink: RequestBodySink {
    private let inner: any RequestBodySink
    private let decorate: (inout HTTPResponse) -> Void

    init(_ inner: any RequestBodySink, decorate: @escaping (inout HTTPResponse) -> Void) {
        self.inner = inner
        self.decorate = decorate
    }

    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard var response = inner.receive(chunk) else { return nil }
        decorate(&response)
        return response
    }

    func finish() -> HTTPResponse {
        var response = inner.finish()
        decorate(&response)
        return response
    }

    func abort() { inner.abort() }

    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { inner.nextChunkBuffer() }
}
