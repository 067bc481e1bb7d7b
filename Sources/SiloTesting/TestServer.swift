import Foundation
public import SiloAuth
public import SiloCore
import SiloEpollHTTP
public import SiloHTTP
import SiloServer
public import SiloServerKit
import SiloTestFaults

#if os(Linux)
public import SiloTLS
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A real Silo server for tests: the v0 application over the stores the test passes, bound to 127.0.0.1 port 0, on
/// the epoll transport — or, with ``Transport/inProcess``, on no socket at all.
///
/// Which to use: `.inProcess` for route tests — what a request means (status, headers, body, what the stores hold
/// after it): the same ``HTTPTestClient/send(method:target:headers:body:bodyMode:)`` calls and ``TestResponse``,
/// with no sockets, transport threads or their scheduling in the way. `.socket` (the default) for anything the wire
/// decides — request parsing (what the parser refuses never reaches the handler in process), framing, keep-alive
/// and pipelining, `Expect: 100-continue`, early answers to a body being sent, slow or vanishing clients, fields the
/// transport drops, concurrency between connections, the transports themselves — and for clients outside the
/// process (curl, the SDK, Python). An in-process server has no port: ``client()`` returns an in-process client, and
/// code that opens its own connection to ``port`` needs `.socket`.
///
/// It chooses no stores: the caller builds them (the suites of this repository get theirs from `SiloTestStores`;
/// `silo serve`'s are chosen by the executable alone).
public final class TestServer {
    public let app: SiloServerApp
    public let http: any HTTPServer
    /// Where the stores keep their files, if they keep any (kept alive as long as the server, for restarts).
    public let directory: TemporaryDirectory?
    public let metadata: any MetadataStore
    public let blobs: any BlobStore
    public var port: Int { http.port }
    /// What serves the requests: a transport on a socket, or direct calls in this process.
    public enum Transport: Sendable {
        case socket
        case inProcess
    }
    public let transport: Transport
    /// Every request this server answered (see ``RequestLog``).
    public let requests: RequestLog
    private let handler: any HTTPHandler

    /// - Parameter hooks: wrap both stores in ``FaultInjectingMetadataStore`` / ``FaultInjectingBlobStore``.
    public convenience init(
        _ transport: Transport = .socket, metadata: any MetadataStore, blobs: any BlobStore,
        directory: TemporaryDirectory? = nil,
        configuration: ServerConfiguration = ServerConfiguration(), policy: any AccessPolicy = AllowAllPolicy(),
        credentials: any CredentialVerifier = TokenVerifier.emulator, hooks: StoreCallHooks? = nil,
        logger: Logger = .disabled, testFaults: Bool = false, threads: Int = 4,
        observability: Observability = Observability(),
        tls: TLSOption = .none
    ) throws {
        var metadata = metadata
        var blobs = blobs
        if let hooks {
            // Outermost, so a hook sees each call exactly as the server makes it.
            metadata = FaultInjectingMetadataStore(metadata, hooks: hooks)
            blobs = FaultInjectingBlobStore(blobs, hooks: hooks)
        }
        let app = SiloServerApp(
            configuration: configuration, metadata: metadata, blobs: blobs, policy: policy, credentials: credentials,
            logger: logger, observability: observability)
        try self.init(
            app: app, transport, metadata: metadata, blobs: blobs, directory: directory, testFaults: testFaults,
            threads: threads, tls: tls)
    }

    /// A server around an app the caller composed (a test of the composition itself: its own route groups).
    package init(
        app: SiloServerApp, _ transport: Transport = .socket, metadata: any MetadataStore, blobs: any BlobStore,
        directory: TemporaryDirectory? = nil, testFaults: Bool = false, threads: Int = 4, tls: TLSOption = .none
    ) throws {
        self.directory = directory
        self.metadata = metadata
        self.blobs = blobs
        self.app = app
        // `silo serve --test-faults` puts the same handler in front of the app.
        let inner: any HTTPHandler =
            testFaults
            ? FaultInjectingHandler(wrapping: app, maxJSONBodyBytes: app.configuration.maxJSONBodyBytes) : app
        let requests = RequestLog()
        self.requests = requests
        let handler = RequestLoggingHandler(inner: inner, log: requests)
        self.handler = handler
        self.transport = transport
        self.http =
            switch transport {
            case .socket:
                try Self.makeHTTPServer(handler, threads: threads, tls: tls)
            case .inProcess: NoTransport()
            }
    }

    private static func makeHTTPServer(_ handler: any HTTPHandler, threads: Int, tls: TLSOption) throws
        -> any HTTPServer
    {
        #if os(Linux)
        var http = EpollHTTPServer.Configuration(host: "127.0.0.1", port: 0)
        http.threadCount = threads
        http.tls = tls.identity
        return try EpollHTTPServer(handler: handler, configuration: http, logger: .disabled)
        #else
        throw HTTPServerError(.startFailed, "test servers on a socket need Linux (the epoll transport)")
        #endif
    }

    /// A new client connected to this server (for `.inProcess`, one that calls the handler).
    public func client() -> HTTPTestClient {
        switch transport {
        case .socket: HTTPTestClient(host: "127.0.0.1", port: http.port)
        case .inProcess: HTTPTestClient(inProcess: handler)
        }
    }

    public func shutdown() { http.shutdown(drainTimeout: 5) }

    deinit { http.shutdown(drainTimeout: 1) }
}

extension TestServer {
    /// Whether the server speaks HTTPS.
    public struct TLSOption: Sendable {
        #if os(Linux)
        let identity: TLSIdentity?
        public static func identity(_ identity: TLSIdentity) -> TLSOption { TLSOption(identity: identity) }
        /// HTTPS with this PEM certificate chain and key (for suites that do not import SiloTLS themselves).
        public static func files(certificate: String, key: String) throws -> TLSOption {
            TLSOption(identity: try TLSIdentity(certificateChainFile: certificate, privateKeyFile: key))
        }
        public static let none = TLSOption(identity: nil)
        #else
        var identity: Never? { nil }
        public static let none = TLSOption()
        #endif
    }
}

/// The ``HTTPServer`` of an in-process ``TestServer``: nothing listens, so there is nothing to shut down.
private final class NoTransport: HTTPServer {
    var port: Int { 0 }
    func shutdown(drainTimeout: Double) {}
}

/// A directory under the system temp dir, removed with everything in it on deinit.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init() throws {
        var template = Array("/tmp/silo-test-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw StorageError(.ioError, "mkdtemp failed")
        }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
