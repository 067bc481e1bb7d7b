#if os(Linux)
import SiloCore

/// The server's certificate and key, from two PEM files, reloadable while the server runs.
///
/// Each new connection takes the ``context`` current at its accept; a ``reload()`` builds a whole new context from
/// the files and swaps it in only if everything loaded, so a bad new certificate (unreadable, malformed, expired,
/// or not matching the key) leaves the old one in service. Open connections keep the context they began with and
/// are never dropped by a reload. Session tickets issued before a reload are not accepted after it (each context
/// has its own ticket keys): those clients do one full handshake.
public final class TLSIdentity: Sendable {
    public let certificateChainFile: String
    public let privateKeyFile: String
    /// Taken on every accept, so a lock that sleeps at once (see ``BlockingMutex``).
    private let current: BlockingMutex<TLSContext>

    /// Loads both files now; throws a ``TLSError`` naming the file and the reason.
    public init(certificateChainFile: String, privateKeyFile: String) throws {
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
        current = BlockingMutex(
            try TLSContext(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile))
    }

    /// The context new connections use.
    public var context: TLSContext { current.withLock { $0 } }

    /// Reads both files again and serves the new certificate from the next connection on; returns it. Throws (and
    /// keeps the current one) when the new files do not load.
    @discardableResult
    public func reload() throws -> TLSCertificateSummary {
        // Loaded outside the lock: accepts go on with the old context meanwhile.
        let loaded = try TLSContext(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile)
        current.withLock { $0 = loaded }
        return loaded.certificate
    }
}
#endif
