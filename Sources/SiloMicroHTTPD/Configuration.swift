extension MicroHTTPDServer {
    /// How the daemon binds and how much it allows. Defaults suit one host serving local clients.
    public struct Configuration: Sendable {
        /// A numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`, `0.0.0.0`, `::`); `localhost` means `127.0.0.1`.
        public var host: String = "127.0.0.1"
        /// 0 binds an ephemeral port; read it back from ``MicroHTTPDServer/port``.
        public var port: Int = 9199
        /// Handlers block on disk and SQLite on these threads, so size the pool for blocking work, not for cores.
        public var threadPoolSize: Int = 8
        /// Per-connection memory pool. It also bounds upload chunks (about half of it arrives per call) and
        /// MHD clears it per request, so bigger costs every small request: keep 64 KiB.
        public var connectionMemoryLimit: Int = 64 * 1024
        /// Simultaneous connections; more are refused at accept.
        public var connectionLimit: Int = 1024
        /// Simultaneous connections from one IP address (`MHD_OPTION_PER_IP_CONNECTION_LIMIT`); 0: no limit.
        public var perClientConnectionLimit: Int = 0
        /// Idle seconds before a connection is closed (also bounds a stalled upload).
        public var connectionTimeoutSeconds: Int = 60
        public var listenBacklog: Int = 1024
        /// Size of the buffer a streamed response body is produced into.
        public var streamBlockSize: Int = 64 * 1024
        /// When the answer is known before the body is read (or a body sink gives up early), the rest of the body
        /// is read and dropped so the client receives the answer; beyond this many bytes the connection is closed
        /// without an answer instead.
        public var maxDiscardedBodyBytes: Int64 = 64 * 1024 * 1024
        /// Lets libmicrohttpd print its own diagnostics to standard error.
        public var libraryErrorLog: Bool = false

        public init(host: String = "127.0.0.1", port: Int = 9199) {
            self.host = host
            self.port = port
        }
    }
}
