package import SiloCore
package import SiloHTTP

/// A body sink that knows, before it reads a byte, the most it will take. The pipeline refuses a body declared
/// longer (`Content-Length`) from the head, with the sink's own 413, so the transport answers at once instead of
/// waiting for a body it would refuse anyway (a JSON PATCH declaring a terabyte). A body without a declared length
/// (chunked) is still bounded as it streams, by the same limit.
package protocol BoundedBodySink: RequestBodySink {
    /// The most body bytes this sink accepts.
    var maxBodyBytes: Int64 { get }
    /// The sink's answer to a body longer than ``maxBodyBytes``.
    func refuse(_ error: StorageError) -> HTTPResponse
}

package enum DeclaredLength {
    /// The answer to `head` when it declares a longer body than `sink` takes; nil to read the body.
    static func refusal(_ sink: any RequestBodySink, _ head: HTTPRequestHead) -> HTTPResponse? {
        guard let bounded = sink as? any BoundedBodySink, let text = head.headers["Content-Length"],
            let declared = Int64(text), declared > bounded.maxBodyBytes
        else { return nil }
        return bounded.refuse(
            StorageError(
                .payloadTooLarge,
                "the request declares a body of \(declared) bytes; this request takes at most \(bounded.maxBodyBytes)"))
    }

    /// What multipart framing may add to its parts: the preamble, each part's delimiter and header lines (the
    /// parser bounds each head to 16 KiB), the closing delimiter and an epilogue.
    package static func multipartFraming(parts: Int) -> Int64 { Int64(parts + 2) * (16 << 10) + (64 << 10) }
}
