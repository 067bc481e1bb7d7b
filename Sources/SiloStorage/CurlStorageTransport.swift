#if canImport(SiloCurl)
public import Foundation
import SiloCurl
import Synchronization

/// The default transport on Linux: libcurl through `SiloCurl`, which moves bytes at curl's own speed with flat
/// memory and stops a transfer reliably when asked, unlike FoundationNetworking's URLSession.
///
/// `timeout` is applied as URLSession applies `timeoutInterval`: to connecting and to any stretch with no
/// bytes moving, not to the whole exchange. libcurl failures reach the SDK as `NSURLErrorDomain` errors, so
/// retry decisions and error mapping are the same for both transports.
public final class CurlStorageTransport: StorageTransport {
    private let client = CurlClient()
    /// libcurl's receive buffer and the largest piece handed to a receiver.
    public let bufferSize: Int
    /// For https: a PEM file of the certificate authorities to trust instead of the system's, such as the CA of
    /// a Silo server's self-signed certificate. nil: the system's (the default bundle of the system's libcurl).
    public let trustedCertificatesFile: String?

    /// `trustedCertificatesFile` defaults to the `SSL_CERT_FILE` environment variable (OpenSSL's name for a CA
    /// bundle to use instead of the system's), which the system's libcurl does not read by itself.
    public init(
        bufferSize: Int = 512 * 1024,
        trustedCertificatesFile: String? = ProcessInfo.processInfo.environment["SSL_CERT_FILE"]
    ) {
        self.bufferSize = bufferSize
        self.trustedCertificatesFile = trustedCertificatesFile.flatMap { $0.isEmpty ? nil : $0 }
    }

    public func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        let body: CurlRequestBody =
            switch request.body {
            case .none: .none
            case .data(let data): .bytes(data)
            case .file(let url, let offset, let length): .file(path: url.path, offset: offset, length: length)
            }
        // Retry budgets may be set to anything (even infinity); keep the limit finite and within libcurl's range.
        let limit = Duration.milliseconds(Int64(min(max(1, timeout), 86_400 * 365) * 1000))
        let curlRequest = CurlRequest(
            method: request.method, url: request.url.absoluteString,
            headers: request.headers.sorted { $0.key < $1.key }.map { CurlHeader($0.key, $0.value) }, body: body,
            timeouts: CurlTimeouts(connect: limit, idle: limit, total: nil), bufferSize: bufferSize,
            trustedCertificatesFile: trustedCertificatesFile)
        do {
            try await client.perform(curlRequest, handler: ReceiverAdapter(receiver: receiver, sent: sent))
        } catch let error as CurlError {
            throw Self.urlError(error, url: request.url)
        }
    }

    /// The `NSURLErrorDomain` error URLSession would have reported for the same failure.
    static func urlError(_ error: CurlError, url: URL) -> NSError {
        let code =
            switch error.kind {
            case .timedOut: NSURLErrorTimedOut
            case .cannotResolveHost: NSURLErrorCannotFindHost
            case .cannotConnect: NSURLErrorCannotConnectToHost
            case .connectionLost: NSURLErrorNetworkConnectionLost
            case .aborted: NSURLErrorCancelled
            case .badURL: NSURLErrorBadURL
            case .other: NSURLErrorUnknown
            }
        return NSError(
            domain: NSURLErrorDomain, code: code,
            userInfo: [
                NSLocalizedDescriptionKey: error.message, NSURLErrorFailingURLErrorKey: url,
                "CurlErrorCode": error.code,
            ])
    }
}

/// Hands libcurl's pieces to a `StorageResponseReceiver`, and upload progress to `sent` when it advances.
private final class ReceiverAdapter: CurlResponseHandler {
    let receiver: any StorageResponseReceiver
    let sent: (@Sendable (Int64) -> Void)?
    /// Last upload count reported. Only touched on the transfer's thread (handler calls are serial), but the
    /// class must be Sendable to reach that thread, so the counter lives in an atomic.
    private let reported = Atomic<Int64>(0)

    init(receiver: any StorageResponseReceiver, sent: (@Sendable (Int64) -> Void)?) {
        self.receiver = receiver
        self.sent = sent
    }

    func receive(head: CurlResponseHead) throws {
        var headers: [String: String] = [:]
        for header in head.headers { headers[header.name] = header.value }
        try receiver.receive(head: StorageHTTPResponseHead(status: head.status, headers: headers))
    }

    func receive(body: UnsafeRawBufferPointer) throws { try receiver.receive(body: Data(body)) }

    func progress(_ progress: CurlProgress) throws {
        guard let sent, progress.uploaded > reported.load(ordering: .relaxed) else { return }
        reported.store(progress.uploaded, ordering: .relaxed)
        sent(progress.uploaded)
    }
}
#endif
