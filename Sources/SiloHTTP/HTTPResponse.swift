import SiloCore

/// A response: status, headers and a body the transport sends without holding more than a bounded buffer.
///
/// Its fields live in one ``CopyOnWrite`` storage, as ``HTTPRequestHead``'s do: an answer passes through the
/// pipeline, the request state machine and the transport's queue, four copies per request that were a dozen
/// retains and releases each (callgrind, `bench/instructions.sh get`).
public struct HTTPResponse {
    private struct Values {
        var status: Int
        var headers: HTTPHeaders
        var body: ResponseBody
        var failure: (any Error & Sendable)?
        var transportFault: TransportFault?
        var requestID: String?
        var replay: (any ReplayPermit)?
    }

    private var storage: CopyOnWrite<Values>

    public var status: Int {
        _read { yield storage.values.status }
        _modify { yield &storage.values.status }
    }
    public var headers: HTTPHeaders {
        _read { yield storage.values.headers }
        _modify { yield &storage.values.headers }
    }
    public var body: ResponseBody {
        _read { yield storage.values.body }
        _modify { yield &storage.values.body }
    }
    /// Why a request failed on the server's side (a 5xx): kept for the server's log, never sent.
    public var failure: (any Error & Sendable)? {
        _read { yield storage.values.failure }
        _modify { yield &storage.values.failure }
    }
    /// A fault the transport injects instead of delivering this response normally (`silo serve --test-faults`);
    /// nil on every ordinary response.
    public var transportFault: TransportFault? {
        _read { yield storage.values.transportFault }
        _modify { yield &storage.values.transportFault }
    }
    /// Sent as `X-Request-Id` after `headers`. Kept apart from them so that headers formatted once for many answers
    /// (``HTTPHeaders/wireFormat``) are sent as they are, not copied per answer to add one field.
    public var requestID: String? {
        _read { yield storage.values.requestID }
        _modify { yield &storage.values.requestID }
    }

    /// Set by a handler that lets the transport send this answer again to the same request head (see
    /// ``ReplayPermit``); nil on most answers. A transport may ignore it.
    public var replay: (any ReplayPermit)? {
        _read { yield storage.values.replay }
        _modify { yield &storage.values.replay }
    }

    public init(status: Int, headers: HTTPHeaders = [:], body: ResponseBody = .empty) {
        storage = CopyOnWrite(
            Values(
                status: status, headers: headers, body: body, failure: nil, transportFault: nil, requestID: nil,
                replay: nil))
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
