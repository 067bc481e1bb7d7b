#if os(Linux)
import Glibc
import SiloCore
import SiloHTTP
import Synchronization

/// Answers framed into `out`: the head, a body in memory, or the file or stream that follows; staged faults set up.
extension Connection {
    func errorResponse(_ status: Int, _ reason: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: .bytes(Array("\(reason)\n".utf8)))
    }

    func respond(_ response: consuming HTTPResponse) {
        // From here the response counts in flight (`unsentResponses`) until it is written; the machine is done.
        _ = machine.completed()
        queue(response, countsInFlight: true)
    }

    /// Appends the head (and a body in memory) to `out` and sets up a file or stream body to follow.
    /// Consumes the response: it is mutated in place (a fault's body, an invalid status), never copied.
    func queue(_ proposed: consuming HTTPResponse, countsInFlight: Bool) {
        if countsInFlight { unsentResponses += 1 }
        var response = proposed
        if !(200...999).contains(response.status) {
            // Interim (1xx) and impossible statuses cannot be a final answer; the transport owns `100 Continue`.
            state.logger.error("invalid response status", metadata: ["silo.http.status": "\(response.status)"])
            exchange.keepAlive = false
            if case .stream(_, let producer) = response.body { producer.close() }
            response = errorResponse(500, "invalid response status")
        }
        if let fault = response.transportFault {
            switch fault {
            case .resetConnection:
                if case .stream(_, let producer) = response.body { producer.close() }
                resetConnection()
                return
            case .stallResponse(let seconds):
                // The response is queued below and held back by the stall, head and all.
                stall(seconds)
            case .breakBody(let after), .stallBody(let after, _):
                // A cut is the producer's error at the fault point (the connection closes, as for any failing
                // producer); a stall is checked before each block.
                if response.body.length != 0 {
                    let body = FaultedBody(response.body, faultAfter: after)
                    response.body = .stream(length: body.length, body)
                    if case .stallBody(_, let seconds) = fault { stalledBody = (body, seconds) }
                }
            }
        }
        let plan = ResponsePlan(
            response, isHeadMethod: exchange.isHeadMethod, isHTTP10: exchange.isHTTP10,
            keepAlive: exchange.keepAlive, draining: state.draining.load(ordering: .relaxed))
        if plan.closesConnection { phase = .closing }
        let refused = ResponseWriter.appendHead(
            response, plan: plan, isHTTP10: exchange.isHTTP10, dateLine: loop.dateLine, to: &out)
        if !refused.isEmpty {
            state.logger.error(
                "response header with a control character dropped",
                metadata: ["silo.http.headers": refused.joined(separator: ",")])
        }
        guard plan.sendsBody else {
            // The body is described, not sent: a producer is still closed once; a file closes with its owner.
            if case .stream(_, let producer) = response.body { producer.close() }
            stalledBody = nil
            return
        }
        switch response.body {
        case .empty:
            break
        case .bytes(let bytes):
            out.append(bytes)
        case .file(let descriptor, let offset, let length):
            if length > 0 { outBody = .file(descriptor, offset: offset, remaining: length) }
        case .stream(let length, let producer):
            if let length, length <= 0 {
                producer.close()
            } else {
                outBody = .stream(producer, remaining: length, chunked: plan.chunked)
            }
        }
    }
}
#endif
