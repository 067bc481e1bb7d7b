public import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one error type of the HTTP transport (SiloEpollHTTP) and its seam: a code, a message naming the address
/// or call, and a cause. It lives here, beside the seam, so callers need not import the transport.
public struct HTTPServerError: ChainedError {
    /// An extensible set of codes (a struct over a private enum, so adding one is not a breaking change).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Sendable {
            case invalidConfiguration, addressInUse, bindFailed, startFailed, injectedFault
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }
        public var description: String { wrapped.rawValue }

        /// A configuration value is out of range or the host is not a numeric address.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// Another socket already listens on the address.
        public static let addressInUse = Code(.addressInUse)
        /// Binding failed for another reason (permission, address not on this host, ...).
        public static let bindFailed = Code(.bindFailed)
        /// The transport could not start: creating an epoll instance or a thread failed, or this platform has no
        /// transport.
        public static let startFailed = Code(.startFailed)
        /// A response body stopped at a fault staged on purpose (``TransportFault``), not by a failure.
        public static let injectedFault = Code(.injectedFault)
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?
    public var file: String
    public var line: Int

    public init(
        _ code: Code, _ message: String, cause: (any Error & Sendable)? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.file = file
        self.line = line
    }

}

/// An errno value with the C library's text for it, as the cause of an ``HTTPServerError``.
public struct SystemCallError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Int32
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }
    public var description: String { "\(call): \(String(cString: strerror(errno))) (errno \(errno))" }
}
