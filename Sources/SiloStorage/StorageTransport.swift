public import Foundation
import Synchronization

/// One HTTP request as the SDK hands it to a transport.
public struct StorageHTTPRequest: Sendable {
    public enum Body: Sendable, Equatable {
        case none
        case data(Data)
        /// `length` bytes of the file starting at `offset`; transports stream it rather than load it.
        case file(URL, offset: Int64, length: Int64)

        public var length: Int64 {
            switch self {
            case .none: 0
            case .data(let d): Int64(d.count)
            case .file(_, _, let length): length
            }
        }
    }

    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: Body

    public init(method: String, url: URL, headers: [String: String] = [:], body: Body = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// Status and headers of a response. Header names are lower-cased.
public struct StorageHTTPResponseHead: Sendable {
    public var status: Int
    public var headers: [String: String]

    public init(status: Int, headers: [String: String]) {
        self.status = status
        var lowered: [String: String] = [:]
        for (k, v) in headers { lowered[k.lowercased()] = v }
        self.headers = lowered
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Receives a response as it arrives. Calls are serial. Throwing from either method stops the transfer: the
/// transport cancels the request and `stream` rethrows that error, even if the network layer keeps delivering.
public protocol StorageResponseReceiver: Sendable {
    func receive(head: StorageHTTPResponseHead) throws
    func receive(body chunk: Data) throws
}

/// The SDK's only way to the network (tests plug in their own). Implementations must honour Swift Task cancellation
/// promptly: throw `CancellationError` and deliver nothing more to the receiver once the calling task is
/// cancelled, whether or not the underlying request actually stopped.
public protocol StorageTransport: Sendable {
    /// Streams one request/response exchange. `sent` reports the cumulative request-body bytes sent.
    func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws
}

/// A response with its (small) body collected in memory.
struct StorageHTTPResponse: Sendable {
    var head: StorageHTTPResponseHead
    var body: Data
    var status: Int { head.status }
    func header(_ name: String) -> String? { head.header(name) }
}

extension StorageTransport {
    /// Collects the body, up to `limit` bytes (metadata, list and error bodies are small).
    func execute(
        _ request: StorageHTTPRequest, timeout: TimeInterval, limit: Int = 16 << 20,
        sent: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> StorageHTTPResponse {
        let collector = CollectingReceiver(limit: limit)
        try await stream(request, timeout: timeout, receiver: collector, sent: sent)
        return try collector.response()
    }
}

/// Keeps the head and up to `limit` body bytes.
final class CollectingReceiver: StorageResponseReceiver {
    private struct State {
        var head: StorageHTTPResponseHead?
        var body = Data()
    }
    private let state = Mutex(State())
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func receive(head: StorageHTTPResponseHead) throws { state.withLock { $0.head = head } }

    func receive(body chunk: Data) throws {
        try state.withLock {
            guard $0.body.count + chunk.count <= limit else {
                throw StorageError.unknown(message: "Response body larger than \(limit) bytes", serverError: [:])
            }
            $0.body.append(chunk)
        }
    }

    func response() throws -> StorageHTTPResponse {
        try state.withLock {
            guard let head = $0.head else {
                throw StorageError.internalError(message: "No response from the transport")
            }
            return StorageHTTPResponse(head: head, body: $0.body)
        }
    }
}
