public import Foundation
import SiloCore
import Synchronization

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The default transport: one `URLSession` with a delegate that streams each response to its receiver.
///
/// FoundationNetworking on Linux sometimes ignores `cancel()` on fast transfers and keeps delivering data
///, so every exchange is finished from our side first: once it is cancelled or its receiver
/// throws, the caller is resumed at once and later callbacks for that task are dropped.
public final class URLSessionStorageTransport: StorageTransport {
    private let session: URLSession
    private let router: SessionRouter

    public init(configuration: URLSessionConfiguration = .ephemeral) {
        let router = SessionRouter()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        self.router = router
        self.session = URLSession(configuration: configuration, delegate: router, delegateQueue: queue)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = timeout
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let task: URLSessionTask
        switch request.body {
        case .none:
            task = session.dataTask(with: urlRequest)
        case .data(let data):
            task = session.uploadTask(with: urlRequest, from: data)
        case .file(let url, let offset, let length):
            let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
            if offset == 0, size == length {
                task = session.uploadTask(with: urlRequest, fromFile: url)
            } else {
                // A slice of a file: read it (its size is bounded by the upload chunk size).
                task = session.uploadTask(with: urlRequest, from: try Self.read(url, offset: offset, length: length))
            }
        }
        let exchange = Exchange(receiver: receiver, sent: sent)
        defer { router.unregister(task.taskIdentifier) }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if exchange.attach(continuation) {
                    router.register(exchange, for: task.taskIdentifier)
                    task.resume()
                }
            }
        } onCancel: {
            exchange.finish(CancellationError())
            task.cancel()
        }
    }

    static func read(_ url: URL, offset: Int64, length: Int64) throws -> Data {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let data = try handle.read(upToCount: Int(length)) ?? Data()
        guard data.count == Int(length) else {
            throw StorageError.unknown(
                message: "File at URL: \(url.absoluteString) changed during the upload", serverError: [:])
        }
        return data
    }
}

/// One in-flight request: its receiver and the continuation to resume exactly once.
final class Exchange: Sendable {
    private let completion = OnceContinuation<Void>()
    let receiver: any StorageResponseReceiver
    let sent: (@Sendable (Int64) -> Void)?

    init(receiver: any StorageResponseReceiver, sent: (@Sendable (Int64) -> Void)?) {
        self.receiver = receiver
        self.sent = sent
    }

    /// Stores the continuation; false (and resumes it) if the exchange already finished (cancelled early).
    func attach(_ continuation: CheckedContinuation<Void, any Error>) -> Bool { completion.attach(continuation) }

    var isFinished: Bool { completion.isFinished }

    /// Resumes the caller once; later calls are ignored.
    func finish(_ error: (any Error)?) { completion.finish(error.map { .failure($0) } ?? .success(())) }

    /// Runs a receiver callback unless finished; a throw finishes the exchange with that error.
    func deliver(_ body: () throws -> Void) -> Bool {
        guard !isFinished else { return false }
        do {
            try body()
            return true
        } catch {
            finish(error)
            return false
        }
    }
}

/// The session delegate: routes callbacks to exchanges by task identifier. It is an NSObject subclass only because
/// URLSession requires one; its one stored property is a Mutex, so it is Sendable without exceptions.
final class SessionRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let exchanges = Mutex([Int: Exchange]())

    func register(_ exchange: Exchange, for id: Int) { exchanges.withLock { $0[id] = exchange } }
    func unregister(_ id: Int) { _ = exchanges.withLock { $0.removeValue(forKey: id) } }
    private func exchange(_ task: URLSessionTask) -> Exchange? { exchanges.withLock { $0[task.taskIdentifier] } }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let exchange = exchange(dataTask), let http = response as? HTTPURLResponse else {
            completionHandler(.cancel)
            return
        }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key] = value }
        }
        let head = StorageHTTPResponseHead(status: http.statusCode, headers: headers)
        completionHandler(exchange.deliver { try exchange.receiver.receive(head: head) } ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let exchange = exchange(dataTask) else { return }
        if !exchange.deliver({ try exchange.receiver.receive(body: data) }) { dataTask.cancel() }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        guard let exchange = exchange(task), !exchange.isFinished else { return }
        exchange.sent?(totalBytesSent)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        exchange(task)?.finish(error)
    }
}
