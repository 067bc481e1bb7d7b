internal import CMicroHTTPD
import SiloCore
import SiloHTTP
import Synchronization

// The libmicrohttpd request callbacks. They are free functions in a file other than main.swift: a closure written
// in top-level code would be inferred @MainActor and trap when an MHD thread calls it.

/// URI log callback: runs once per request, before MHD splits or decodes the target. Its return value becomes
/// the request's initial `*con_cls`.
/// Ownership: the context is retained here (`passRetained`) and released in `requestCompleted`, which MHD calls
/// for every request whose URI was logged (it marks the connection "client aware" at this point).
func requestURILogged(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    let target = uri.map { String(cString: $0) } ?? ""
    let request = RequestContext(rawTarget: target, maxDiscardedBodyBytes: daemon.maxDiscardedBodyBytes)
    return Unmanaged.passRetained(request).toOpaque()
}

/// Completion notice: the request is over (answered, client gone, timeout, or shutdown).
func requestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ reason: MHD_RequestTerminationCode
) {
    guard let cls, let conCls, let opaque = conCls.pointee else { return }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    // Ownership: balances the passRetained in requestURILogged; the slot is cleared so nothing can use it again.
    let request = Unmanaged<RequestContext>.fromOpaque(opaque).takeRetainedValue()
    conCls.pointee = nil
    let completion = request.machine.completed()
    if let sink = completion.abort {
        daemon.logger.debug(
            "request body abandoned",
            metadata: ["silo.http.reason": "\(reason.rawValue)", "silo.http.target": request.rawTarget])
        sink.abort()
    }
    if completion.endsInFlightRequest {
        daemon.inFlight.subtract(1, ordering: .releasing)
    }
}

/// Access handler: called once with the head, then once per body chunk, then once more when the body is done.
func requestAccess(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadSize: UnsafeMutablePointer<Int>?, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadSize, let conCls, let opaque = conCls.pointee else { return .NO }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    // Ownership: borrowed; the completion callback holds the reference we release.
    let request = Unmanaged<RequestContext>.fromOpaque(opaque).takeUnretainedValue()

    if request.machine.isAwaitingHead {
        let head = makeRequestHead(
            connection: connection, rawTarget: request.rawTarget,
            method: method.map { String(cString: $0) } ?? "",
            version: version.map { String(cString: $0) } ?? "")
        request.isHead = head.method == "HEAD"
        request.declaredBodyLength = head.declaredBodyLength
        daemon.inFlight.add(1, ordering: .relaxed)
        let disposition = daemon.handler.begin(head)
        let step = request.machine.began(
            disposition, requestHasBody: head.hasBody, clientAwaitsContinue: head.awaitsContinue)
        return perform(step, connection: connection, request: request, daemon: daemon)
    }

    let count = uploadSize.pointee
    if count > 0 {
        // Every chunk is consumed in full: nothing is left for MHD to buffer.
        uploadSize.pointee = 0
        request.bodyBytesSeen += Int64(count)
        let result: MHD_Result
        switch request.machine.bodyChunk(count: count) {
        case .deliver(let sink):
            let answer = sink.receive(UnsafeRawBufferPointer(start: uploadData, count: count))
            result = perform(
                request.machine.receiveReturned(answer), connection: connection, request: request, daemon: daemon)
        case .discard:
            result = .YES
        case .closeConnection:
            daemon.logger.debug(
                "request body too long to drop, closing", metadata: ["silo.http.target": request.rawTarget])
            return .NO
        }
        // See silo_mhd_peer_has_closed: without this, a client gone mid-upload is noticed only at the timeout.
        if result == .YES && request.bodyMayContinue && silo_mhd_peer_has_closed(connection) != 0 {
            daemon.logger.debug("client closed mid-body", metadata: ["silo.http.target": request.rawTarget])
            return .NO
        }
        return result
    }

    switch request.machine.bodyEnded() {
    case .finish(let sink):
        return perform(.queue(sink.finish()), connection: connection, request: request, daemon: daemon)
    case .queue(let response):
        return perform(.queue(response), connection: connection, request: request, daemon: daemon)
    case .proceed:
        return .YES
    }
}

private func perform(
    _ step: RequestStateMachine.Step, connection: OpaquePointer, request: RequestContext, daemon: DaemonContext
) -> MHD_Result {
    switch step {
    case .proceed:
        return .YES
    case .closeConnection:
        return .NO
    case .queue(var response):
        if daemon.draining.load(ordering: .relaxed) { response.headers.set("Connection", "close") }
        return queueResponse(response, on: connection, request: request, daemon: daemon)
    }
}
