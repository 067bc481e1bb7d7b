import Dispatch
import Foundation
import SiloAuth
import SiloCLI
import SiloCore
import SiloEpollHTTP
import SiloEvents
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestFaults
import Synchronization

#if os(Linux)
import SiloTLS
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `silo serve`: composes the embedded backends (SQLite + local disk), the v0 application and the HTTP transport,
/// and runs until SIGINT/SIGTERM, then drains requests in flight and exits 0. With `--import DIR` it loads an
/// emulator export once the listener is up; with `--export-on-exit` it writes one back before stopping.
struct ServeCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "serve",
            abstract:
                "Serve the Firebase Storage v0 API and the GCS JSON API (metadata in SQLite, bytes on local disk).",
            discussion: """
                Every option can also come from the environment (SILO_PORT, SILO_DATA, …; the name in capitals with
                '-' as '_') or from the config file (~/.config/silo/config or --config FILE, lines like 'port = 9200').
                Flags win over the environment, which wins over the file; --print-config shows the result.
                """,
            options: ServeOptions.definitions, managesSignals: true)
    }

    var options: ServeOptions
    var values: ParsedValues

    init(from values: ParsedValues) throws {
        options = try ServeOptions(from: values)
        self.values = values
    }

    func validate() throws {
        if options.exportOnExit && options.importDirectory == nil {
            throw ValidationError("--export-on-exit needs --import DIR (the directory it exports back to)")
        }
        if options.importDirectory != nil && options.tls != nil {
            // The import and export talk to the server's own listener, which would need to trust its certificate.
            throw ValidationError("--import cannot be combined with --tls-cert yet; import over plain HTTP first")
        }
        if options.testFaults && !SecurityPosture.isLoopback(options.host) {
            // Any client that knows the API could make the server fail for everyone.
            throw ValidationError(
                "--test-faults lets any client stage failures, so it is refused on \(options.host), which is not a loopback address"
            )
        }
    }

    func run(_ context: CommandContext) async throws {
        if options.printConfig {
            context.stdout.write(ServeOptions.printConfiguration(values))
            return
        }
        let status = await Self.serve(options, context: context)
        if status != 0 { throw ExitCode(status) }
    }

    private static func serve(_ options: ServeOptions, context: CommandContext) async -> Int32 {
        let logger = Logger(label: "silo", level: options.logLevel)
        let security: ServeSecurity
        do {
            security = try ServeSecurity(options, logger: logger)
        } catch {
            writeError("silo serve: \(describe(error))\n")
            return 64
        }
        let server: any HTTPServer
        let app: SiloServerApp
        let maintenance: any DispatchSourceTimer
        let events: EventDispatcher?
        let tls: ServeTLS
        do {
            tls = try ServeTLS(options, logger: logger)
        } catch {
            writeError("silo serve: \(describe(error))\n")
            return 64
        }
        do {
            try makeDirectory(options.dataDirectory)
            let metadata = try Backends.metadata(
                options.metadataURL, dataDirectory: options.dataDirectory,
                recordsEvents: !options.eventWebhooks.isEmpty, inlineLimit: options.inlineLimit,
                logger: logger)
            let blobs = try Backends.blobs(options.blobsURL, dataDirectory: options.dataDirectory)
            // With the metadata store open (SQLite's lock held): what was registered before now was not this process's.
            let started = Timestamp.now()
            var configuration = ServerConfiguration()
            if !options.buckets.isEmpty { configuration.buckets = Set(options.buckets) }
            configuration.openAdminAPI = security.posture.emulatorTokens
            configuration.createBucketsOnUpload = options.createBucketsOnUpload ?? security.posture.emulatorTokens
            configuration.maxObjectSize = options.limits.maxObjectSize
            configuration.maxJSONBodyBytes = options.limits.maxJSONBodyBytes
            if let suffixes = options.virtualHostSuffixes { configuration.virtualHostSuffixes = suffixes }
            configuration.maxSessionsPerCaller = options.limits.maxSessionsPerCaller
            configuration.maxPendingBytesPerCaller = options.limits.maxPendingBytesPerCaller
            configuration.garbageGraceSeconds = Int64(options.garbageGraceSeconds)
            configuration.maintenanceIntervalSeconds = Double(options.maintenanceIntervalSeconds)
            configuration.serviceAccounts = security.serviceAccounts
            configuration.publicURLs = options.publicURLs
            configuration.trustedProxies = options.trustedProxies
            configuration.maxInflatedBytesPerCallerPerMinute = options.limits.maxInflatedBytesPerCaller
            let observability = Observability(accessLog: try options.accessLog.map { try AccessLog($0) })
            if !options.rules.isEmpty { observability.register(security.rulesStatistics) }
            configuration.rulesStatistics = security.rulesStatistics
            observability.register(BucketUsageMetrics(store: metadata))
            if let storeMetrics = Backends.metrics(of: metadata) { observability.register(storeMetrics) }
            if let file = options.imagesFile {
                configuration.images = try ServeImages.settings(file: file, dataDirectory: options.dataDirectory)
            }
            // The served buckets exist from the start, as the emulator's default bucket does (GCS clients list and
            // upload without creating them); in emulator mode so does the project's default bucket.
            var defaults = options.buckets
            if security.posture.emulatorTokens && defaults.isEmpty,
                let bucket = try? BucketName(options.projectID + ".appspot.com")
            {
                defaults.append(bucket)
            }
            for bucket in defaults { _ = try metadata.ensureBucket(bucket) }
            configuration.defaultBuckets = defaults
            app = SiloServerApp(
                configuration: configuration, metadata: metadata, blobs: blobs, policy: security.policy,
                credentials: security.verifier, logger: logger, observability: observability)
            app.resumeThumbnailPresets()
            let handler: any HTTPHandler =
                options.testFaults
                ? FaultInjectingHandler(wrapping: app, maxJSONBodyBytes: options.limits.maxJSONBodyBytes) : app
            server = try makeHTTPServer(options, handler: handler, tls: tls, logger: logger)
            // Serving first, collecting in the background (the first pass may have a crash's worth to delete).
            maintenance = ServeMaintenance.start(
                app, storeShared: Backends.sharesMetadata(options.metadataURL), started: started)
            events = try ServeEvents.start(options, metadata: metadata, port: server.port, logger: logger)
            if let events { observability.register(EventDeliveryMetrics { events.statistics() }) }
        } catch {
            writeError("silo serve: \(describe(error))\n")
            return 1
        }
        let shownHost = options.host.contains(":") ? "[\(options.host)]" : options.host
        writeOut(
            """
            Silo is serving the Firebase Storage API at \(tls.scheme)://\(shownHost):\(server.port)
              data:    \(options.dataDirectory)
              buckets: \(bucketsLine(options, creates: options.createBucketsOnUpload ?? security.posture.emulatorTokens))
              rules:   \(rulesLine(options))
              events:  \(ServeEvents.describe(options))
            \((security.posture.notices.map { "  note:    \($0)" } + faultsNotice(options)).joined(separator: "\n"))
              Swift:   storage.useEmulator(withHost: "\(options.host == "::1" ? "::1" : options.host)", port: \(server.port))

            """)
        let signals = SignalWaiter()
        let portability = Portability(options: options, port: server.port, stderr: context.stderr)
        if let directory = options.importDirectory, options.exportOnExit, !DataPortability.holdsExport(directory) {
            // As the emulator: `--import DIR --export-on-exit` on a missing or empty DIR starts empty and writes the
            // export there at exit.
            writeOut("silo serve: nothing to import from \(directory) yet; --export-on-exit writes it at exit\n")
        } else if let directory = options.importDirectory {
            do {
                writeOut("silo serve: \(try await portability.importExport(from: directory))\n")
            } catch {
                writeError("silo serve: --import \(directory) failed: \(DataPortability.describe(error))\n")
                server.shutdown(drainTimeout: 0)
                events?.shutdown()
                signals.cancel()
                return 1
            }
        }
        await runUntilSignalled(server: server, app: app, security: security, tls: tls, signals: signals)
        maintenance.cancel()
        var status: Int32 = 0
        if options.exportOnExit, let directory = options.importDirectory {
            do {
                writeOut("silo serve: \(try await portability.export(to: directory))\n")
            } catch {
                writeError("silo serve: --export-on-exit to \(directory) failed: \(DataPortability.describe(error))\n")
                status = 1
            }
        }
        logger.info(
            "shutting down: draining requests in flight", metadata: ["silo.drain.seconds": "\(options.drainSeconds)"])
        server.shutdown(drainTimeout: options.drainSeconds)
        events?.shutdown()
        // The lines of the drained requests are written before the process exits.
        app.observability.accessLog?.close()
        logger.info("stopped")
        return status
    }

    /// The transport (docs/transport.md); `--threads` sizes its event loops, `--workers` its blocking pool.
    private static func makeHTTPServer(
        _ options: ServeOptions, handler: any HTTPHandler, tls: ServeTLS, logger: Logger
    ) throws -> any HTTPServer {
        #if os(Linux)
        var http = EpollHTTPServer.Configuration(host: options.host, port: options.port)
        http.tls = tls.identity
        if let threads = options.threads { http.threadCount = threads }
        http.workerCount = options.workers
        http.connectionLimit = options.limits.maxConnections
        http.perClientConnectionLimit = options.limits.maxConnectionsPerClient
        http.connectionTimeoutSeconds = options.limits.idleTimeoutSeconds
        http.headTimeoutSeconds = options.limits.headTimeoutSeconds
        http.maxRequestHeadBytes = options.limits.maxHeadBytes
        return try EpollHTTPServer(handler: handler, configuration: http, logger: logger)
        #else
        throw ValidationError("silo serve runs on Linux only: its transport is epoll (docs/transport.md)")
        #endif
    }

    /// Which buckets are served, and whether a v0 upload creates one (emulator mode) or it must exist already.
    private static func bucketsLine(_ options: ServeOptions, creates: Bool) -> String {
        guard options.buckets.isEmpty else { return options.buckets.map(\.rawValue).joined(separator: ", ") }
        return creates
            ? "any (created on first upload)"
            : "any that exists (create with the GCS API or --create-buckets-on-upload)"
    }

    /// The rules files, each with the bucket it is for; and the firebase.json they came from, if found.
    private static func rulesLine(_ options: ServeOptions) -> String {
        let files =
            options.rules.isEmpty
            ? "none"
            : options.rules.map { ($0.bucket.map { $0.rawValue + "=" } ?? "") + $0.path }.joined(separator: ", ")
        guard let path = options.firebaseJSON else { return files }
        return files
            + "\n  project: \(options.projectID) (from \(path)\(options.firebaseJSONDetected ? ", found in the working directory" : ""))"
    }

    /// The banner line that says faults are staged on request.
    private static func faultsNotice(_ options: ServeOptions) -> [String] {
        guard options.testFaults else { return [] }
        return ["  faults:  --test-faults: storage-testbench's Retry Test API at /retry_test"]
    }

    /// The one-line reason of a startup failure: the message of any of the modules' errors, no chain.
    private static func describe(_ error: any Error) -> String {
        (error as? any ChainedError)?.message ?? "\(error)"
    }

    private static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw StorageError(.ioError, "cannot create data directory \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Waits for SIGINT or SIGTERM, reloading rules; the listener stays up (for `--export-on-exit`) until the caller
    /// shuts it down.
    private static func runUntilSignalled(
        server: any HTTPServer, app: SiloServerApp, security: ServeSecurity, tls: ServeTLS, signals: SignalWaiter
    ) async {
        signal(SIGPIPE, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        let reloads = DispatchQueue(label: "silo.reload")
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: reloads)
        hangup.setEventHandler {
            security.reload()
            tls.reload()
            do {
                try app.observability.accessLog?.reopen()
            } catch {
                app.logger.error(
                    "access log not reopened; still writing to the old file",
                    metadata: ["silo.error": detailedDescription(of: error)])
            }
        }
        hangup.resume()
        let rulesWatch = DispatchSource.makeTimerSource(queue: reloads)
        rulesWatch.schedule(deadline: .now() + 1, repeating: 1)
        rulesWatch.setEventHandler { security.reloadRules() }
        rulesWatch.resume()
        await signals.wait()
        rulesWatch.cancel()
        hangup.cancel()
    }
}

/// Resumes one waiter when SIGINT or SIGTERM arrives (the signals are ignored from creation on, so none is lost
/// between startup and the wait).
///
/// `@unchecked Sendable`: `sources` is set once in `init` and only cancelled afterwards (DispatchSource's cancel is
/// thread-safe); all mutable state is behind the mutex.
private final class SignalWaiter: @unchecked Sendable {
    private final class Shared: Sendable {
        let state = Mutex<(signalled: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    }
    private let shared = Shared()
    private let sources: [any DispatchSourceSignal]

    init() {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "silo.signals")
        let shared = self.shared
        sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let waiter = shared.state.withLock { state in
                    state.signalled = true
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
            source.resume()
            return source
        }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = shared.state.withLock { state in
                if state.signalled { return true }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }

    deinit { sources.forEach { $0.cancel() } }
}

/// `--import` / `--export-on-exit` against this server's own listener, as the admin so rules do not apply: `owner`
/// in emulator mode, else the first key of `--admin-key-file`.
private struct Portability {
    let endpoint: String
    let token: String?
    let stderr: any OutputSink

    init(options: ServeOptions, port: Int, stderr: any OutputSink) {
        let host = ["0.0.0.0", "::", ""].contains(options.host) ? "127.0.0.1" : options.host
        endpoint = host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
        if let path = options.adminKeyFile, let data = FileManager.default.contents(atPath: path) {
            token = String(decoding: data, as: UTF8.self).split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty && !$0.hasPrefix("#") }
        } else {
            token = "owner"
        }
        self.stderr = stderr
    }

    func importExport(from directory: String) async throws -> String {
        try await DataPortability.importExport(from: directory, endpoint: endpoint, token: token, log: stderr)
    }

    func export(to directory: String) async throws -> String {
        try await DataPortability.export(to: directory, endpoint: endpoint, token: token, log: stderr)
    }
}
