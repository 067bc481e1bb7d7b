/// A response: status, headers and a body the transport sends without holding more than a bounded buffer.
public struct HTTPResponse {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: ResponseBody
    /// Why a request failed on the server's side (a 5xx): kept for the server's log, never sent.
    public var failure: (any Error & Sendable)?
    /// A fault the transport injects instead of delivering this response normally (`silo serve --test-faults`);
    /// nil on every ordinary response.
    public var transportFault: TransportFault?
    /// Sent as `X-Request-Id` after `headers`. Kept apart from them so that headers formatted once for many answers
    /// (``HTTPHeaders/wireFormat``) are sent as they are, not copied per answer to add one field.
    public var requestID: String?

    public init(status: Int, headers: HTTPHeaders = [:], body: ResponseBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

public enum ResponseBody {
    case empty
    /// A small body held in memory (JSON, errors, small objects).
    case bytes([UInt8])
    /// `length` bytes of an open file from `offset`, sent with sendfile. The transport owns the descriptor.
    case file(OwnedFileDescriptor, offset: Int64, length: Int64)
    /// Produced on demand; `length` nil means chunked transfer encoding.
    case stream(length: Int64?, any ResponseBodyProducer)

    /// The number of bytes the body will have, when known.
    public var length: Int64? {
        switch self {
        case .empty: 0
        case .bytes(let b): Int64(b.count)
        case .file(_, _, let length): length
        case .stream(let length, _): length
        }
    }
}

/// Pulls the next piece of a streamed response body. Called on one transport thread at a time.
public protocol ResponseBodyProducer: AnyObject {
    /// Fills `buffer` with up to `buffer.count` bytes; returns 0 at the end. A thrown error aborts the connection.
    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Called once when the transport is done with the producer (finished or aborted).
    func close()
}

/// A file descriptor with one owner: closed in deinit unless ownership was taken with `take()`.
public final class OwnedFileDescriptor {
    private var fd: Int32
    public init(_ fd: Int32) { self.fd = fd }
    /// Gives up ownership; the caller must close the returned descriptor.
    public func take() -> Int32 {
        let value = fd
        fd = -1
        return value
    }
    public var rawValue: Int32 { fd }
    deinit { if fd >= 0 { _ = closeDescriptor(fd) } }
}

#if canImport(Glibc)
import Glibc
private func closeDescriptor(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#elseif canImport(Darwin)
import Darwin
private func closeDescriptor(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif
