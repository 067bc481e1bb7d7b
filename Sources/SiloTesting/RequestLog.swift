import SiloHTTP
import Synchronization

/// Every request a ``TestServer`` answered, as its handler saw it: what client-side tests use to show that a call
/// made no request (a cache hit), or exactly one, and what it was answered with.
public final class RequestLog: Sendable {
    public struct Entry: Sendable {
        public var method: String
        /// Still percent-encoded, as sent.
        public var path: String
        /// Without `?`; empty when absent.
        public var query: String
        public var ifNoneMatch: String?
        /// The status of an answer given at the head (every GET); nil when the handler reads a body first.
        public var status: Int?
        /// The response body's length when answered at the head and known.
        public var bodyLength: Int64?
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    public var all: [Entry] { entries.withLock { $0 } }
    public var count: Int { entries.withLock { $0.count } }

    /// The requests whose path ends with `suffix` (an encoded object name, e.g. `o/images%2Fa.png`).
    public func requests(pathSuffix suffix: String) -> [Entry] { all.filter { $0.path.hasSuffix(suffix) } }

    /// Records the request; an answer the transport may replay is given a permit that records each replay too.
    @discardableResult
    func record(_ head: HTTPRequestHead, _ disposition: RequestDisposition) -> RequestDisposition {
        var entry = Entry(
            method: head.method, path: head.rawPath, query: head.rawQuery, ifNoneMatch: head.headers["if-none-match"])
        guard case .respond(var response) = disposition else {
            append(entry)
            return disposition
        }
        entry.status = response.status
        entry.bodyLength = response.body.length
        append(entry)
        if let permit = response.replay { response.replay = LoggedReplay(inner: permit, entry: entry, log: self) }
        return .respond(response)
    }

    fileprivate func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
}

/// A replay is a request the handler did not see: logged as the one it answers again.
private final class LoggedReplay: ReplayPermit {
    let inner: any ReplayPermit
    let entry: RequestLog.Entry
    let log: RequestLog

    init(inner: any ReplayPermit, entry: RequestLog.Entry, log: RequestLog) {
        (self.inner, self.entry, self.log) = (inner, entry, log)
    }

    var isCurrent: Bool { inner.isCurrent }

    func replayed() -> String {
        log.append(entry)
        return inner.replayed()
    }
}

/// Records each request in a ``RequestLog``, then hands it on unchanged.
struct RequestLoggingHandler: HTTPHandler {
    let inner: any HTTPHandler
    let log: RequestLog

    func begin(_ head: HTTPRequestHead) -> RequestDisposition {
        let disposition = inner.begin(head)
        log.record(head, disposition)
        return disposition
    }

    func makeInlineAnswerer() -> (any InlineAnswerer)? {
        inner.makeInlineAnswerer().map { LoggedInlineAnswerer(inner: $0, log: log) }
    }
}

/// Counted when answered inline; a declined request is counted by `begin`, a deferred one when its rest runs.
final class LoggedInlineAnswerer: InlineAnswerer {
    let inner: any InlineAnswerer
    let log: RequestLog

    init(inner: any InlineAnswerer, log: RequestLog) { (self.inner, self.log) = (inner, log) }

    func beginInline(_ head: HTTPRequestHead) -> InlineDisposition {
        switch inner.beginInline(head) {
        case .answered(let disposition):
            return .answered(log.record(head, disposition))
        case .declined:
            return .declined
        case .deferred(let rest):
            return .deferred(LoggedDeferredBegin(rest: rest, head: head, log: log))
        }
    }
}

/// The rest of a declined inline attempt, recorded when it runs.
final class LoggedDeferredBegin: DeferredBegin {
    let rest: any DeferredBegin
    let head: HTTPRequestHead
    let log: RequestLog

    init(rest: any DeferredBegin, head: HTTPRequestHead, log: RequestLog) {
        (self.rest, self.head, self.log) = (rest, head, log)
    }

    func begin() -> RequestDisposition {
        let disposition = rest.begin()
        log.record(head, disposition)
        return disposition
    }
}
