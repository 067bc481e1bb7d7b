import Dispatch
import SiloAuth
import SiloCore
import SiloDisk
import SiloHTTP
import SiloMicroHTTPD
import SiloSQLite
import SiloServer

#if canImport(Glibc)
import Glibc
#endif

/// `silo serve`: composes the embedded backends (SQLite + local disk), the v0 application and the HTTP transport,
/// and runs until SIGINT/SIGTERM, then drains requests in flight and exits 0.
enum ServeCommand {
    static func run(_ arguments: [String]) -> Int32 {
        let options: ServeOptions
        do {
            guard let parsed = try ServeOptions.parse(arguments) else {
                writeOut(ServeOptions.help)
                return 0
            }
            options = parsed
        } catch {
            writeError("silo serve: \(error.message)\n")
            return 64
        }
        let logger = Logger(label: "silo")
        let security: ServeSecurity
        do {
            security = try ServeSecurity(options, logger: logger)
        } catch {
            writeError("silo serve: \(describe(error))\n")
            return 64
        }
        do {
            try makeDirectory(options.dataDirectory)
            let metadata = try SQLiteMetadataStore(path: options.dataDirectory + "/metadata.sqlite")
            let blobs = try DiskBlobStore(root: options.dataDirectory + "/blobs")
            var configuration = ServerConfiguration()
            if !options.buckets.isEmpty { configuration.buckets = Set(options.buckets) }
            configuration.openAdminAPI = security.posture.emulatorTokens
            let app = SiloServerApp(
                configuration: configuration, metadata: metadata, blobs: blobs, policy: security.policy,
                credentials: security.verifier, logger: logger)
            // Nothing can be in flight before the listener opens: reclaim everything a crash left behind.
            _ = app.collectGarbage(graceSeconds: 0)
            var http = MicroHTTPDServer.Configuration(host: options.host, port: options.port)
            http.threadPoolSize = options.threads
            let server = try MicroHTTPDServer(handler: app, configuration: http, logger: logger)
            let shownHost = options.host.contains(":") ? "[\(options.host)]" : options.host
            writeOut(
                """
                Silo is serving the Firebase Storage API at http://\(shownHost):\(server.port)
                  data:    \(options.dataDirectory)
                  buckets: \(options.buckets.isEmpty ? "any (created on first upload)" : options.buckets.map(\.rawValue).joined(separator: ", "))
                  rules:   \(options.rulesFile ?? "none")
                \(security.posture.notices.map { "  note:    \($0)" }.joined(separator: "\n"))
                  Swift:   storage.useEmulator(withHost: "\(options.host == "::1" ? "::1" : options.host)", port: \(server.port))

                """)
            runUntilSignalled(server: server, app: app, security: security, options: options, logger: logger)
            return 0
        } catch {
            writeError("silo serve: \(describe(error))\n")
            return 1
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let e = error as? StorageError { return e.message }
        if let e = error as? HTTPServerError { return e.message }
        if let e = error as? AuthError { return e.message }
        return "\(error)"
    }

    private static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw StorageError(.ioError, "cannot create data directory \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Blocks until SIGINT or SIGTERM, running maintenance periodically; then drains and returns.
    private static func runUntilSignalled(
        server: MicroHTTPDServer, app: SiloServerApp, security: ServeSecurity, options: ServeOptions, logger: Logger
    ) {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        let queue = DispatchQueue(label: "silo.signals")
        let done = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { done.signal() }
            source.resume()
            return source
        }
        let maintenance = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "silo.maintenance"))
        maintenance.schedule(deadline: .now() + 300, repeating: 300)
        maintenance.setEventHandler { _ = app.collectGarbage(graceSeconds: 24 * 3600) }
        maintenance.resume()
        let reloads = DispatchQueue(label: "silo.reload")
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: reloads)
        hangup.setEventHandler { security.reload() }
        hangup.resume()
        let rulesWatch = DispatchSource.makeTimerSource(queue: reloads)
        rulesWatch.schedule(deadline: .now() + 1, repeating: 1)
        rulesWatch.setEventHandler { security.reloadRules() }
        rulesWatch.resume()
        done.wait()
        logger.info(
            "shutting down: draining requests in flight", metadata: ["silo.drain.seconds": "\(options.drainSeconds)"])
        maintenance.cancel()
        rulesWatch.cancel()
        hangup.cancel()
        server.shutdown(drainTimeout: options.drainSeconds)
        sources.forEach { $0.cancel() }
        logger.info("stopped")
    }
}
