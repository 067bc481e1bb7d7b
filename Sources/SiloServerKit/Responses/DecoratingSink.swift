package import SiloCore
package import SiloHTTP

/// A body sink whose answer is changed on the way out, early or final: the console's sandbox headers, a JSON API
/// answer's `fields` selection (SiloGCSAPI's `PartialResponse`), the fault handler's (`--test-faults`) staged faults. It keeps
/// the inner sink's bound, so a body declared too long is still refused from the head (``BoundedBodySink``).
package final class DecoratingSink: BoundedBodySink {
    private let inner: any RequestBodySink
    private let decorate: (inout HTTPResponse) -> Void

    package init(_ inner: any RequestBodySink, decorate: @escaping (inout HTTPResponse) -> Void) {
        self.inner = inner
        self.decorate = decorate
    }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard var response = inner.receive(chunk) else { return nil }
        decorate(&response)
        return response
    }

    package func finish() -> HTTPResponse {
        var response = inner.finish()
        decorate(&response)
        return response
    }

    package var maxBodyBytes: Int64 { (inner as? any BoundedBodySink)?.maxBodyBytes ?? .max }

    package func refuse(_ error: StorageError) -> HTTPResponse {
        var response = (inner as? any BoundedBodySink)?.refuse(error) ?? HTTPResponse(status: 413)
        decorate(&response)
        return response
    }

    package func abort() { inner.abort() }

    package func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { inner.nextChunkBuffer() }
}
