#if os(Linux)
import SiloHTTP
public import SiloTLS

extension EpollHTTPServer {
    /// How the server binds and how much it allows.
    public struct Configuration: Sendable {
        /// A numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`, `0.0.0.0`, `::`, `[::1]`); `localhost` means
        /// `127.0.0.1`.
        public var host: String = "127.0.0.1"
        /// 0 binds an ephemeral port; read it back from ``EpollHTTPServer/port``.
        public var port: Int = 9199
        /// Event loops, one thread each. They run only what cannot block (socket I/O, `beginInline` answers), so
        /// one per core the process may run on is the default: more loops than cores only time-slice one core
        /// between them (measured in bench/results/threads.md: 8 loops on one core, p99 3.7–7.0 ms; 1 loop,
        /// 2.3–2.6 ms).
        public var threadCount: Int = EpollHTTPServer.availableCPUs
        /// Worker threads for the handler calls that may block (store transactions, fsync, PostgreSQL, S3,
        /// hashing): size this for the stores' pools, not for cores.
        public var workerCount: Int = 16
        /// Calls that wait for a worker, across all loops; past this a loop keeps the call and that connection
        /// reads nothing more until there is room (further clients wait in the kernel's socket buffers).
        public var workerQueueLimit: Int = 1024
        /// Simultaneous connections. At the limit a new connection takes the place of this loop's longest-idle
        /// keep-alive connection (one with no request under way); if there is none it is closed at once.
        public var connectionLimit: Int = 1024
        /// Simultaneous connections from one IP address; more are closed at once. 0: no limit per client.
        public var perClientConnectionLimit: Int = 0
        /// Idle seconds before a connection is closed: no byte read or written for this long. Also bounds a stalled
        /// upload and a client that stops reading a response. 0 disables it.
        public var connectionTimeoutSeconds: Int = 60
        /// A request head must be complete this many seconds after its first byte — or, on a new connection, after
        /// the connection was accepted — however slowly its bytes trickle in (slowloris). 0 disables it.
        public var headTimeoutSeconds: Int = 20
        public var listenBacklog: Int = 1024
        /// A request head (request line and fields) longer than this is answered with 431.
        public var maxRequestHeadBytes: Int = 64 * 1024
        /// Size of the buffer a streamed response body is produced into.
        public var streamBlockSize: Int = 64 * 1024
        /// When the answer is known before the body is read (or a body sink gives up early), the rest of the body
        /// is read and dropped so the client receives the answer; beyond this many bytes the connection is closed
        /// without an answer instead.
        public var maxDiscardedBodyBytes: Int64 = 64 * 1024 * 1024
        /// The body buffers of one uploading connection, together: two halves, one read while a worker's sink has
        /// the other, so uploads reach the sink in chunks of up to half this size (fewer syscalls and hand-offs per
        /// GiB than small chunks). Each event loop also has one buffer of this size for bodies it only drops.
        public var readBufferSize: Int = 256 * 1024
        /// Serve HTTPS with this certificate (each connection takes the one current at its accept, so
        /// ``TLSIdentity/reload()`` applies to new connections); nil: plain HTTP. docs/tls.md.
        public var tls: TLSIdentity?

        public init(host: String = "127.0.0.1", port: Int = 9199) {
            self.host = host
            self.port = port
        }
    }
}

extension EpollHTTPServer.Configuration {
    func validate() throws {
        func invalid(_ text: String) -> HTTPServerError { HTTPServerError(.invalidConfiguration, text) }
        guard (0...65535).contains(port) else { throw invalid("port \(port) is outside 0...65535") }
        guard threadCount >= 1 && threadCount <= 1024 else {
            throw invalid("threadCount \(threadCount) is outside 1...1024")
        }
        guard workerCount >= 1 && workerCount <= 1024 else {
            throw invalid("workerCount \(workerCount) is outside 1...1024")
        }
        guard workerQueueLimit >= 1 else { throw invalid("workerQueueLimit must be positive") }
        guard connectionLimit >= 1 else { throw invalid("connectionLimit must be positive") }
        guard connectionTimeoutSeconds >= 0 else { throw invalid("connectionTimeoutSeconds must not be negative") }
        guard headTimeoutSeconds >= 0 else { throw invalid("headTimeoutSeconds must not be negative") }
        guard perClientConnectionLimit >= 0 else { throw invalid("perClientConnectionLimit must not be negative") }
        guard listenBacklog >= 1, listenBacklog <= Int(Int32.max) else {
            throw invalid("listenBacklog must be positive")
        }
        guard maxRequestHeadBytes >= 1024 else { throw invalid("maxRequestHeadBytes must be at least 1024") }
        guard streamBlockSize >= 1024 else { throw invalid("streamBlockSize must be at least 1024") }
        guard maxDiscardedBodyBytes >= 0 else { throw invalid("maxDiscardedBodyBytes must not be negative") }
        guard readBufferSize >= 4096 else { throw invalid("readBufferSize must be at least 4096") }
    }
}
#endif
