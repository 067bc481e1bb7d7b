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
    // Handler calls run inside the access handler on this thread, so none is running now.
    let completion = request.machine.completed()
    if let sink = completion.abort {
        daemon.logger.debug(
            "request body abandoned",
            metadata: ["silo.http.reason": "\(reason.rawValue)", "silo.http.target": request.rawTarget])
        sink.abort()
    }
    if completion.endsRequest {
        daemon.inFlight.subtract(1, ordering: .releasing)
    }
}

/// Access handler: called once with the head, then once per body chunk, then once more when the body is done.
///
/// libmicrohttpd's quirks, as inputs to the shared ``RequestStateMachine``: the machine answers on the first call
/// only to refuse a body the client waits to send (`Expect: 100-continue`: queueing then suppresses the
/// `100 Continue`) or to stage a reset; every other answer waits for the last call, because 0.9.75 closes the
/// connection when a response is queued on the first call (halving throughput) and cannot send one before the body
/// was consumed. MHD sends `100 Continue` itself. Handler calls run here, on MHD's thread.
func requestAccess(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadSize: UnsafeMutablePointer<Int>?, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadSize, let conCls, let opaque = conCls.pointee else { return .NO }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    // Ownership: borrowed; the completion callback holds the reference we release.
    let request = Unmanaged<RequestContext>.fromOpaque(opaque).takeUnretainedValue()

    if !request.headSeen {
        request.headSeen = true
        let head = makeRequestHead(
            connection: connection, rawTarget: request.rawTarget,
            method: method.map { String(cString: $0) } ?? "",
            version: version.map { String(cString: $0) } ?? "")
        request.isHead = head.method == "HEAD"
        request.declaredBodyLength = head.declaredBodyLength
        guard case .callBegin = request.machine.headArrived(hasBody: head.hasBody, awaitsContinue: head.awaitsContinue)
        else { return .NO }
        daemon.inFlight.add(1, ordering: .relaxed)
        let disposition = daemon.handler.beginOnThisThread(head)
        return perform(request.machine.began(disposition), connection: connection, request: request, daemon: daemon)
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
        case .closeConnection:
            daemon.logger.debug(
                "request body too long to drop, closing", metadata: ["silo.http.target": request.rawTarget])
            return .NO
        default:
            result = .YES
        }
        // See silo_mhd_peer_has_closed: without this, a client gone mid-upload is noticed only at the timeout.
        if result == .YES && request.bodyMayContinue && silo_mhd_peer_has_closed(connection) != 0 {
            daemon.logger.debug("client closed mid-body", metadata: ["silo.http.target": request.rawTarget])
            return .NO
        }
        return result
    }

    var action = request.machine.bodyEnded()
    if case .finish(let sink) = action { action = request.machine.finishReturned(sink.finish()) }
    return perform(action, connection: connection, request: request, daemon: daemon)
}

/// Carries out one action of the machine (the ones that remain once the handler calls above are made).
private func perform(
    _ action: RequestStateMachine.Action, connection: OpaquePointer, request: RequestContext, daemon: DaemonContext
) -> MHD_Result {
    switch action {
    case .respond(var response, _, let gaveUp):
        // MHD decides itself how the connection goes on after a refused `100-continue` body.
        gaveUp?.abort()
        if daemon.draining.load(ordering: .relaxed) { response.headers.set("Connection", "close") }
        return queueResponse(response, on: connection, request: request, daemon: daemon)
    case .abort(let sink):
        sink.abort()
        return .NO
    case .closeConnection:
        return .NO
    case .drop(let response):
        if case .stream(_, let producer) = response.body { producer.close() }
        return .NO
    case .proceed, .readBody, .discard, .callBegin, .deliver, .finish:
        return .YES
    }
}
