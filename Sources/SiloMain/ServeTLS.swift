import SiloCore

#if os(Linux)
import SiloTLS
#endif

/// `--tls-cert` / `--tls-key`: the certificate `silo serve` serves HTTPS with, reloaded on SIGHUP (docs/tls.md).
struct ServeTLS: Sendable {
    #if os(Linux)
    let identity: TLSIdentity?
    #endif
    private let logger: Logger

    init(_ options: ServeOptions, logger: Logger) throws {
        self.logger = logger
        #if os(Linux)
        guard let files = options.tls else {
            identity = nil
            return
        }
        let identity = try TLSIdentity(certificateChainFile: files.certificate, privateKeyFile: files.key)
        self.identity = identity
        logger.info(
            "tls certificate loaded",
            metadata: [
                "silo.tls.certificate": "\(identity.context.certificate)", "silo.tls.file": files.certificate,
            ])
        #else
        // ServeOptions refuses the flags with any engine but epoll, which only Linux has.
        precondition(options.tls == nil, "--tls-cert without the epoll engine")
        #endif
    }

    var scheme: String {
        #if os(Linux)
        return identity == nil ? "http" : "https"
        #else
        return "http"
        #endif
    }

    /// Loads the files again; on failure the certificate in service stays, and the log says why.
    func reload() {
        #if os(Linux)
        guard let identity else { return }
        do {
            let loaded = try identity.reload()
            logger.notice(
                "tls certificate reloaded",
                metadata: ["silo.tls.certificate": "\(loaded)", "silo.tls.file": identity.certificateChainFile])
        } catch {
            logger.error(
                "tls certificate not reloaded; keeping the one in service",
                metadata: [
                    "silo.tls.certificate": "\(identity.context.certificate)",
                    "silo.error": detailedDescription(of: error),
                ])
        }
        #endif
    }
}
