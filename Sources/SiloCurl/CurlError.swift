/// A failed transfer: libcurl's result code and message, classified for retry decisions.
public struct CurlError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case timedOut
        case cannotResolveHost
        case cannotConnect
        /// The connection broke or the server closed it mid-response.
        case connectionLost
        /// Stopped on purpose: `CurlTransferControl.abort()` or a handler that threw.
        case aborted
        case badURL
        case other
    }

    /// libcurl's `CURLcode`.
    public var code: Int
    public var message: String
    public var kind: Kind

    public init(code: Int, message: String, kind: Kind) {
        self.code = code
        self.message = message
        self.kind = kind
    }

    public var description: String { "libcurl error \(code): \(message)" }
}
