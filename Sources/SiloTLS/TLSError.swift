#if os(Linux)
public import SiloCore

/// The one error type of SiloTLS: a code, a message naming the file or the peer, and a cause (OpenSSL's reasons as
/// an ``CryptoError`` (SiloHashing), or a ``SystemCallError``-like errno text). Never carries key material.
public struct TLSError: ChainedError {
    /// An extensible set of codes (a struct over a private enum, so adding one is not a breaking change).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Sendable {
            case unreadableFile, invalidCertificate, invalidPrivateKey, keyMismatch, expiredCertificate
            case setupFailed, handshakeFailed, connectionFailed
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }
        public var description: String { wrapped.rawValue }

        /// A certificate or key file is missing, unreadable, empty or larger than the limit.
        public static let unreadableFile = Code(.unreadableFile)
        /// The certificate file holds no PEM certificate, or one OpenSSL refuses.
        public static let invalidCertificate = Code(.invalidCertificate)
        /// The key file holds no PEM private key OpenSSL can read (an encrypted key is refused: no one is asked for
        /// a passphrase).
        public static let invalidPrivateKey = Code(.invalidPrivateKey)
        /// The private key is not the certificate's.
        public static let keyMismatch = Code(.keyMismatch)
        /// The certificate's validity ended (its notAfter is in the past).
        public static let expiredCertificate = Code(.expiredCertificate)
        /// OpenSSL refused a setting of the context or a new connection's state (out of memory, a broken library).
        public static let setupFailed = Code(.setupFailed)
        /// The client's handshake failed (no shared version or cipher, a bad record, an alert).
        public static let handshakeFailed = Code(.handshakeFailed)
        /// A read or write on an established connection failed (a bad record, a reset).
        public static let connectionFailed = Code(.connectionFailed)
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?
    public var file: String
    public var line: Int

    public init(
        _ code: Code, _ message: String, cause: (any Error & Sendable)? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.file = file
        self.line = line
    }
}
#endif
