internal import CMicroHTTPD
import SiloCore
import SiloHTTP

#if canImport(Glibc)
import Glibc
#endif

// Turning an HTTPResponse into an MHD response and queueing it.

private let contentReaderEndOfStream = -1  // MHD_CONTENT_READER_END_OF_STREAM (a cast macro, not imported)
private let contentReaderEndWithError = -2  // MHD_CONTENT_READER_END_WITH_ERROR
private let sizeUnknown = UInt64.max  // MHD_SIZE_UNKNOWN: chunked transfer encoding

/// Queues `response` on `connection`. MHD adds Content-Length / Transfer-Encoding itself from the body, and for
/// HEAD sends the headers only (with the body's Content-Length).
func queueResponse(
    _ response: HTTPResponse, on connection: OpaquePointer, request: RequestContext, daemon: DaemonContext
)
    -> MHD_Result
{
    var response = response
    if let fault = response.transportFault {
        switch fault {
        case .resetConnection:
            if case .stream(_, let producer) = response.body { producer.close() }
            silo_mhd_reset_connection(connection)
            return .NO
        case .breakBody(let after):
            // The producer fails at the fault point, which ends the connection mid-body.
            if response.body.length != 0 {
                let body = FaultedBody(response.body, faultAfter: after)
                response.body = .stream(length: body.length, body)
            }
        case .stallBody, .stallResponse:
            // libmicrohttpd's threads would have to sleep to stall: not staged, the response goes out whole.
            daemon.logger.notice("staged stall not supported by this transport", metadata: [:])
        }
    }
    let target = request.rawTarget
    // HEAD and 304 answers have no body but may declare the length of the one they describe.
    let bodyless = request.isHead || response.status == 304
    guard
        let mhdResponse = makeMHDResponse(response.body, headers: response.headers, bodyless: bodyless, daemon: daemon)
    else {
        daemon.logger.error("cannot create response", metadata: ["silo.http.target": target])
        return .NO
    }
    // Ownership: MHD reference-counts responses; queueing takes its own reference, so ours is dropped at once.
    defer { MHD_destroy_response(mhdResponse) }
    var fields = response.headers
    if let id = response.requestID { fields.add("X-Request-Id", id) }
    for field in fields where !isComputedByLibrary(field.name) {
        // The same wall as the epoll transport's: a NUL would cut the C string, a CR or LF split the response.
        if !HTTPHeaders.isSendable(field) || MHD_add_response_header(mhdResponse, field.name, field.value) == .NO {
            daemon.logger.warning(
                "response header rejected", metadata: ["silo.http.header": field.name, "silo.http.target": target])
        }
    }
    guard (100...999).contains(response.status) else {
        daemon.logger.error("invalid response status", metadata: ["silo.http.status": "\(response.status)"])
        return .NO
    }
    return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
}

/// MHD derives these from the body and rejects or rewrites them when set by hand.
private func isComputedByLibrary(_ name: String) -> Bool {
    equalsIgnoringCase(name, "Content-Length") || equalsIgnoringCase(name, "Transfer-Encoding")
}

private func makeMHDResponse(_ body: ResponseBody, headers: HTTPHeaders, bodyless: Bool, daemon: DaemonContext)
    -> OpaquePointer?
{
    switch body {
    case .empty:
        // A body-less answer that declares a length (HEAD of an object) keeps it: MHD only sends the
        // Content-Length of the body it holds, so give it a body of that length that is never read.
        if bodyless, let declared = headers["Content-Length"].flatMap({ UInt64($0) }), declared > 0 {
            return MHD_create_response_from_callback(declared, 1, neverReadContent, nil, nil)
        }
        return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
    case .bytes(let bytes):
        return bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .file(let descriptor, let offset, let length):
        guard offset >= 0, length >= 0 else { return nil }
        // Ownership: MHD closes the descriptor when the response is destroyed (sendfile serves it), but only if
        // the response was created; otherwise it is still ours to close.
        let fd = descriptor.take()
        guard let response = MHD_create_response_from_fd_at_offset64(UInt64(length), fd, UInt64(offset)) else {
            _ = close(fd)
            return nil
        }
        return response
    case .stream(let length, let producer):
        let box = ProducerBox(producer)
        // Ownership: retained for MHD; released (and the producer closed) in releaseProducer, which MHD calls
        // when the response is destroyed, including when creation fails below.
        let opaque = Unmanaged.passRetained(box).toOpaque()
        let size = length.map { UInt64(max(0, $0)) } ?? sizeUnknown
        guard
            let response = MHD_create_response_from_callback(
                size, daemon.streamBlockSize, produceContent, opaque, releaseProducer)
        else {
            releaseProducer(opaque)
            return nil
        }
        // A HEAD (or 304) describing a body of unknown length: neither a length nor chunked framing, whose last
        // chunk libmicrohttpd would send anyway; the connection closes after it instead.
        if bodyless && length == nil && silo_mhd_http_1_0_response(response) == .NO {
            MHD_destroy_response(response)
            return nil
        }
        return response
    }
}

/// Keeps a producer alive while MHD holds the response. Used on the connection's thread only.
private final class ProducerBox {
    let producer: any ResponseBodyProducer
    init(_ producer: any ResponseBodyProducer) { self.producer = producer }
}

private func produceContent(
    _ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int
) -> Int {
    guard let cls, let buffer, max > 0 else { return contentReaderEndWithError }
    // Ownership: borrowed; releaseProducer holds the reference.
    let box = Unmanaged<ProducerBox>.fromOpaque(cls).takeUnretainedValue()
    do {
        let count = try box.producer.produce(into: UnsafeMutableRawBufferPointer(start: buffer, count: max))
        // MHD treats 0 as "nothing yet, ask again", so the end is reported explicitly.
        return count > 0 ? Swift.min(count, max) : contentReaderEndOfStream
    } catch {
        return contentReaderEndWithError
    }
}

private func releaseProducer(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    // Ownership: balances the passRetained in makeMHDResponse.
    let box = Unmanaged<ProducerBox>.fromOpaque(cls).takeRetainedValue()
    box.producer.close()
}

/// Content reader of a body that is declared but never sent (HEAD); reading it would be a bug.
private func neverReadContent(
    _ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int
) -> Int {
    contentReaderEndWithError
}
