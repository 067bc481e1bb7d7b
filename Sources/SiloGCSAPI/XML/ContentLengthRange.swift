import SiloCore
import SiloHTTP
import SiloServerKit

/// `x-goog-content-length-range: MIN,MAX` on an XML API upload (signed URLs sign it to bound what their holder may
/// store): a declared `Content-Length` outside the range is refused before the handler runs, and a body without one
/// is counted as it streams — past MAX the write is aborted, short of MIN it is aborted at the end, before it
/// commits.
enum ContentLengthRange {
    /// The header's range; nil without the header. Throws 400 for a malformed one.
    package static func parse(_ context: RequestContext) throws -> ClosedRange<Int64>? {
        guard let header = context.headers["x-goog-content-length-range"] else { return nil }
        let parts = header.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: " ")
        }
        guard parts.count == 2, let low = Int64(parts[0]), let high = Int64(parts[1]), low >= 0, low <= high else {
            throw StorageError(.invalidArgument, "x-goog-content-length-range must be MIN,MAX with 0 <= MIN <= MAX")
        }
        return low...high
    }

    static func outside(_ range: ClosedRange<Int64>, _ size: Int64) -> StorageError {
        size > range.upperBound
            ? StorageError(
                .payloadTooLarge, "the body is larger than x-goog-content-length-range allows (\(range.upperBound))")
            : StorageError(
                .invalidArgument, "the body is smaller than x-goog-content-length-range allows (\(range.lowerBound))")
    }

    /// Runs `handler` unless the declared length is out of range; bounds the body it reads.
    package static func bound(_ context: RequestContext, _ handler: () -> RequestDisposition) -> RequestDisposition {
        let range: ClosedRange<Int64>?
        do { range = try parse(context) } catch { return .respond(Reply.xmlError(error)) }
        guard let range, context.method == "PUT" || context.method == "POST" else { return handler() }
        if let declared = context.declaredBodyLength, !range.contains(declared) {
            return .respond(Reply.xmlError(outside(range, declared)))
        }
        switch handler() {
        case .respond(let response): return .respond(response)
        case .readBody(let sink): return .readBody(RangeBoundSink(sink, range))
        }
    }
}

/// Counts the body on its way to the handler's sink; ends the exchange once it leaves the range.
private final class RangeBoundSink: BoundedBodySink {
    private let inner: any RequestBodySink
    private let range: ClosedRange<Int64>
    private var received: Int64 = 0

    init(_ inner: any RequestBodySink, _ range: ClosedRange<Int64>) {
        self.inner = inner
        self.range = range
    }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        received += Int64(chunk.count)
        guard received <= range.upperBound else {
            inner.abort()
            return Reply.xmlError(ContentLengthRange.outside(range, received))
        }
        return inner.receive(chunk)
    }

    package func finish() -> HTTPResponse {
        guard received >= range.lowerBound else {
            inner.abort()
            return Reply.xmlError(ContentLengthRange.outside(range, received))
        }
        return inner.finish()
    }

    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { inner.nextChunkBuffer() }

    func abort() { inner.abort() }

    var maxBodyBytes: Int64 { min(range.upperBound, (inner as? any BoundedBodySink)?.maxBodyBytes ?? .max) }
    package func refuse(_ error: StorageError) -> HTTPResponse { Reply.xmlError(error) }
}
