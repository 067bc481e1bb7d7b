public import Foundation

/// One request header, kept in order (names may repeat).
public struct CurlHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// Where a request body comes from. Bodies are streamed to libcurl through its read callback, never loaded whole.
public enum CurlRequestBody: Sendable {
    case none
    case bytes(Data)
    /// `length` bytes of the file at `path`, starting at `offset`.
    case file(path: String, offset: Int64, length: Int64)
    /// Bytes produced on demand: `read` fills as much of the buffer as it can and returns the count (0 = end).
    /// With a nil `length` the body goes out with chunked transfer encoding. Called on the transfer's thread.
    case reader(length: Int64?, read: @Sendable (UnsafeMutableRawBufferPointer) throws -> Int)

    /// The announced length, nil when unknown.
    public var length: Int64? {
        switch self {
        case .none: 0
        case .bytes(let data): Int64(data.count)
        case .file(_, _, let length): length
        case .reader(let length, _): length
        }
    }
}

/// Time limits of one transfer. Nil means no limit.
public struct CurlTimeouts: Sendable, Equatable {
    /// Limit on establishing the connection.
    public var connect: Duration?
    /// Longest time with no bytes moving in either direction, like URLSession's `timeoutInterval`.
    public var idle: Duration?
    /// Limit on the whole transfer.
    public var total: Duration?

    public init(connect: Duration? = .seconds(30), idle: Duration? = .seconds(60), total: Duration? = nil) {
        self.connect = connect
        self.idle = idle
        self.total = total
    }
}

/// An HTTP request for `CurlClient`.
public struct CurlRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [CurlHeader]
    public var body: CurlRequestBody
    public var timeouts: CurlTimeouts
    /// libcurl's receive buffer (`CURLOPT_BUFFERSIZE`), which is also the largest piece handed to the sink. Large
    /// buffers mean fewer callbacks and syscalls: 512 KiB reaches curl's own speed on loopback.
    public var bufferSize: Int
    /// For https: a PEM file of the certificate authorities to trust instead of the system's (`CURLOPT_CAINFO`);
    /// nil trusts the system's.
    public var trustedCertificatesFile: String?

    public init(
        method: String = "GET", url: String, headers: [CurlHeader] = [], body: CurlRequestBody = .none,
        timeouts: CurlTimeouts = CurlTimeouts(), bufferSize: Int = 512 * 1024, trustedCertificatesFile: String? = nil
    ) {
        self.trustedCertificatesFile = trustedCertificatesFile
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeouts = timeouts
        self.bufferSize = bufferSize
    }
}
