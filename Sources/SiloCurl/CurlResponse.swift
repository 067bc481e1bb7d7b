/// Status line and headers of the final response (interim 1xx responses are skipped).
public struct CurlResponseHead: Sendable, Equatable {
    public var status: Int
    /// Headers in arrival order, names as the server sent them.
    public var headers: [CurlHeader]

    public init(status: Int, headers: [CurlHeader]) {
        self.status = status
        self.headers = headers
    }

    /// The first header with this name, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }
}

/// Bytes moved so far by a transfer; totals are 0 when unknown.
public struct CurlProgress: Sendable, Equatable {
    public var uploaded: Int64
    public var uploadTotal: Int64
    public var downloaded: Int64
    public var downloadTotal: Int64

    public init(uploaded: Int64, uploadTotal: Int64, downloaded: Int64, downloadTotal: Int64) {
        self.uploaded = uploaded
        self.uploadTotal = uploadTotal
        self.downloaded = downloaded
        self.downloadTotal = downloadTotal
    }
}

/// Receives one response as it arrives, on the transfer's thread, one call at a time. Throwing from any method
/// aborts the transfer; `CurlClient.perform` then rethrows that error.
public protocol CurlResponseHandler: Sendable {
    /// The final response's status and headers, before any body byte.
    func receive(head: CurlResponseHead) throws
    /// The next piece of the body (at most the request's `bufferSize`). The buffer is only valid during the call.
    func receive(body: UnsafeRawBufferPointer) throws
    /// Called as bytes move, and at least once a second while the transfer runs.
    func progress(_ progress: CurlProgress) throws
}

extension CurlResponseHandler {
    public func progress(_ progress: CurlProgress) throws {}
}
