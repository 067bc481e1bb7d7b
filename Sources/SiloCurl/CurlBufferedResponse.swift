import Synchronization

/// A whole response held in memory: for small replies (XML, JSON) and bounded ranges, never for unbounded bodies.
public struct CurlBufferedResponse: Sendable {
    public var head: CurlResponseHead
    public var body: [UInt8]

    public var status: Int { head.status }

    public init(head: CurlResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }
}

/// The response body grew past the limit the caller set; the transfer was stopped there.
public struct CurlBodyLimitExceeded: Error, Sendable, Equatable {
    public var limit: Int
    public var status: Int

    public init(limit: Int, status: Int) {
        self.limit = limit
        self.status = status
    }
}

extension CurlClient {
    /// Runs `request` on the calling thread and returns the final response with its body, which may hold at most
    /// `bodyLimit` bytes (the transfer is aborted with ``CurlBodyLimitExceeded`` past that). `reserve` preallocates
    /// the body buffer, e.g. to the length of a requested range.
    public func performBuffered(
        _ request: CurlRequest, bodyLimit: Int, reserve: Int = 0,
        control: CurlTransferControl = CurlTransferControl()
    ) throws -> CurlBufferedResponse {
        let collector = CurlBodyCollector(limit: bodyLimit, reserve: min(reserve, bodyLimit))
        let status = try performBlocking(request, handler: collector, control: control)
        return collector.response(status: status)
    }
}

/// Gathers one response into memory up to a limit.
final class CurlBodyCollector: CurlResponseHandler {
    private struct State {
        var head: CurlResponseHead?
        var body: [UInt8] = []
    }
    private let state: Mutex<State>
    private let limit: Int

    init(limit: Int, reserve: Int) {
        self.limit = limit
        var initial = State()
        initial.body.reserveCapacity(max(0, reserve))
        state = Mutex(initial)
    }

    func receive(head: CurlResponseHead) throws {
        state.withLock { $0.head = head }
    }

    func receive(body: UnsafeRawBufferPointer) throws {
        try state.withLock { state in
            guard state.body.count + body.count <= limit else {
                throw CurlBodyLimitExceeded(limit: limit, status: state.head?.status ?? 0)
            }
            state.body.append(contentsOf: body)
        }
    }

    func response(status: Int) -> CurlBufferedResponse {
        state.withLock { state in
            CurlBufferedResponse(
                head: state.head ?? CurlResponseHead(status: status, headers: []), body: state.body)
        }
    }
}
