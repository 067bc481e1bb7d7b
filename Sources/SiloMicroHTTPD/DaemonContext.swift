import SiloCore
import SiloHTTP
import Synchronization

/// What every libmicrohttpd callback of one daemon shares. Immutable apart from atomics, so any MHD worker thread
/// may use it; handed to C as the callbacks' `cls` (retained while the daemon runs, see ``MicroHTTPDServer``).
final class DaemonContext: Sendable {
    let handler: any HTTPHandler
    let logger: Logger
    let streamBlockSize: Int
    let maxDiscardedBodyBytes: Int64
    /// Requests that reached the handler and have not completed; shutdown waits for it to reach 0.
    let inFlight = Atomic<Int>(0)
    /// Set when shutdown begins: responses then carry `Connection: close` so keep-alive clients go away.
    let draining = Atomic<Bool>(false)

    init(handler: any HTTPHandler, logger: Logger, streamBlockSize: Int, maxDiscardedBodyBytes: Int64) {
        self.handler = handler
        self.logger = logger
        self.streamBlockSize = streamBlockSize
        self.maxDiscardedBodyBytes = maxDiscardedBodyBytes
    }
}

/// The per-request state behind MHD's `*con_cls`. Created by the URI log callback, released by the completion
/// callback. MHD serves a connection on one worker thread, so only that thread ever touches it (not Sendable).
final class RequestContext {
    /// The request target exactly as sent (`/path?query`), before MHD splits or decodes anything.
    let rawTarget: String
    /// The shared request machine (SiloHTTP), fed with libmicrohttpd's calls; see RequestCallbacks.swift.
    var machine: RequestStateMachine
    /// The first access-handler call (the head) has been made.
    var headSeen = false
    /// MHD sends no body for HEAD; set once the head is parsed.
    var isHead = false
    /// Content-Length of the request body; nil when chunked or absent.
    var declaredBodyLength: Int64?
    var bodyBytesSeen: Int64 = 0

    /// More body bytes may still come (always true for a chunked body, whose end MHD parses).
    var bodyMayContinue: Bool {
        guard let declaredBodyLength else { return true }
        return bodyBytesSeen < declaredBodyLength
    }

    init(rawTarget: String, maxDiscardedBodyBytes: Int64) {
        self.rawTarget = rawTarget
        self.machine = RequestStateMachine(maxDiscardedBodyBytes: maxDiscardedBodyBytes)
    }
}
