import Foundation
import SiloStorage
import Synchronization

/// Which requests a `FaultInjectingTransport` fails.
enum RequestKind: Sendable {
    /// GET of an object's metadata (no `alt=media`).
    case metadata
    /// GET of an object's bytes (`alt=media`).
    case media
    /// POST that starts a resumable upload.
    case uploadStart
    /// PUT that carries (or finalizes) upload bytes.
    case uploadChunk

    func matches(_ request: StorageHTTPRequest) -> Bool {
        let query = request.url.query ?? ""
        switch self {
        case .metadata: return request.method == "GET" && !query.contains("alt=media")
        case .media: return request.method == "GET" && query.contains("alt=media")
        case .uploadStart: return request.method == "POST"
        case .uploadChunk:
            let command = request.headers["X-Goog-Upload-Command"] ?? ""
            return request.method == "PUT" && (command.contains("upload") || command == "finalize")
        }
    }
}

/// Wraps the real transport and answers the first `failures` requests of `kind` with a synthetic `status` (and
/// `headers`), without reaching the server; everything else passes through. Counts every request of `kind`.
final class FaultInjectingTransport: StorageTransport {
    let inner: any StorageTransport
    let kind: RequestKind
    let failures: Int
    let status: Int
    let headers: [String: String]
    private let seen = Mutex(0)

    init(
        _ inner: any StorageTransport, kind: RequestKind, failures: Int = .max, status: Int = 503,
        headers: [String: String] = [:]
    ) {
        self.inner = inner
        self.kind = kind
        self.failures = failures
        self.status = status
        self.headers = headers
    }

    /// Requests of `kind` so far, failed or passed through.
    var attempts: Int { seen.withLock { $0 } }

    func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        if kind.matches(request) {
            let n = seen.withLock {
                $0 += 1
                return $0
            }
            if n <= failures {
                try receiver.receive(head: StorageHTTPResponseHead(status: status, headers: headers))
                try receiver.receive(body: Data(#"{"error":{"code":\#(status),"message":"injected"}}"#.utf8))
                return
            }
        }
        try await inner.stream(request, timeout: timeout, receiver: receiver, sent: sent)
    }
}

/// Answers every request with one canned response, never touching the network.
final class StubTransport: StorageTransport {
    let status: Int
    let body: Data

    init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }

    func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        try receiver.receive(
            head: StorageHTTPResponseHead(status: status, headers: ["Content-Type": "application/json"]))
        if !body.isEmpty { try receiver.receive(body: body) }
    }
}

/// Seconds since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}
