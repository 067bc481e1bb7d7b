import SiloHTTP

/// A request body's sink as the pipeline hands it to the transport: counts the body's bytes, binds the request id
/// while the handler's sink runs, and passes its answer (early or final) through ``RequestPipeline/finish(_:_:_:)``;
/// an abort is counted as 499.
final class ObservedSink: RequestBodySink {
    private let inner: any RequestBodySink
    private let pipeline: RequestPipeline
    private let head: HTTPRequestHead
    private var exchange: Exchange

    init(_ inner: any RequestBodySink, pipeline: RequestPipeline, head: HTTPRequestHead, exchange: Exchange) {
        self.inner = inner
        self.pipeline = pipeline
        self.head = head
        self.exchange = exchange
    }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        exchange.bytesIn += Int64(chunk.count)
        guard var response = RequestIdentity.$current.withValue(exchange.id, operation: { inner.receive(chunk) })
        else { return nil }
        pipeline.finish(&response, head, exchange)
        return response
    }

    package func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { inner.nextChunkBuffer() }

    package func finish() -> HTTPResponse {
        var response = RequestIdentity.$current.withValue(exchange.id) { inner.finish() }
        pipeline.finish(&response, head, exchange)
        return response
    }

    package func abort() {
        RequestIdentity.$current.withValue(exchange.id) { inner.abort() }
        pipeline.observation.observeAbort(head, exchange)
    }
}
