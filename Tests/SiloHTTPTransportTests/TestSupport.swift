import Foundation
import SiloCore
import SiloEpollHTTP
import SiloHTTP
import SiloTesting
import Synchronization

/// A handler made of one closure, for tests.
struct ClosureHandler: HTTPHandler {
    let route: @Sendable (HTTPRequestHead) -> RequestDisposition
    init(_ route: @escaping @Sendable (HTTPRequestHead) -> RequestDisposition) { self.route = route }
    func begin(_ head: HTTPRequestHead) -> RequestDisposition { route(head) }
}

/// Thread-safe notes taken by handlers on the transport's threads and read by the test.
final class Recorder: Sendable {
    private let events = Mutex<[String]>([])
    func note(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
    func contains(_ event: String) -> Bool { all.contains(event) }

    /// Polls until `event` was noted or `seconds` pass.
    func waitFor(_ event: String, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if contains(event) { return true }
            usleep(5_000)
        }
        return contains(event)
    }
}

/// SILO_TEST_HTTP_LOG=1 shows the transport's debug log.
let verbose = ProcessInfo.processInfo.environment["SILO_TEST_HTTP_LOG"] == "1"
let testLogger = verbose ? Logger(label: "test", level: .trace) : .disabled

/// The transport the tests here run against: one, since Silo has one (docs/transport.md); the tests keep it as an
/// argument so that a second transport would be held to all of them.
enum Engine: String, CaseIterable, Sendable, CustomStringConvertible {
    case epoll
    var description: String { rawValue }

    /// The epoll transport exists on Linux only.
    #if os(Linux)
    static let allCases: [Engine] = [.epoll]
    static let epollAvailable = true
    #else
    static let allCases: [Engine] = []
    static let epollAvailable = false
    #endif
}

/// The settings tests vary, mapped onto each transport's own Configuration.
struct TransportSettings {
    var host = "127.0.0.1"
    var port = 0
    var threadPoolSize = 4
    var connectionTimeoutSeconds = 60
    var maxDiscardedBodyBytes: Int64 = 64 * 1024 * 1024
    var streamBlockSize = 64 * 1024
    var connectionLimit = 1024
    var perClientConnectionLimit = 0
    var headTimeoutSeconds = 20
}

/// What the tests need from a transport beyond ``HTTPServer``.
protocol TestTransport: HTTPServer, Sendable {
    var requestsInFlight: Int { get }
}
#if os(Linux)
extension EpollHTTPServer: TestTransport {}
#endif

func makeServer(
    _ engine: Engine, _ settings: TransportSettings = TransportSettings(), logger: Logger = testLogger,
    _ handler: @escaping @Sendable (HTTPRequestHead) -> RequestDisposition
) throws -> any TestTransport {
    switch engine {
    case .epoll:
        #if os(Linux)
        var configuration = EpollHTTPServer.Configuration(host: settings.host, port: settings.port)
        configuration.threadCount = settings.threadPoolSize
        configuration.connectionLimit = settings.connectionLimit
        configuration.perClientConnectionLimit = settings.perClientConnectionLimit
        configuration.headTimeoutSeconds = settings.headTimeoutSeconds
        configuration.connectionTimeoutSeconds = settings.connectionTimeoutSeconds
        configuration.maxDiscardedBodyBytes = settings.maxDiscardedBodyBytes
        configuration.streamBlockSize = settings.streamBlockSize
        return try EpollHTTPServer(handler: ClosureHandler(handler), configuration: configuration, logger: logger)
        #else
        throw HTTPServerError(.invalidConfiguration, "the epoll transport is Linux-only")
        #endif
    }
}

/// Starts a server on an ephemeral loopback port, runs `body`, and shuts the server down.
func withServer<T>(
    _ engine: Engine,
    configure: (inout TransportSettings) -> Void = { _ in },
    _ handler: @escaping @Sendable (HTTPRequestHead) -> RequestDisposition,
    _ body: (any TestTransport, HTTPTestClient) throws -> T
) throws -> T {
    var settings = TransportSettings()
    configure(&settings)
    let server = try makeServer(engine, settings, handler)
    defer { server.shutdown(drainTimeout: 2) }
    let client = HTTPTestClient(host: settings.host, port: server.port)
    defer { client.disconnect() }
    return try body(server, client)
}

func text(_ string: String, status: Int = 200) -> RequestDisposition {
    .respond(HTTPResponse(status: status, headers: ["Content-Type": "text/plain"], body: .bytes(Array(string.utf8))))
}

/// Deterministic bytes whose value depends on the offset, so reordering or loss shows.
func patternBytes(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) % 251) }
}

/// A sink that checks the pattern as it arrives and answers with the byte count and sum.
final class PatternSink: RequestBodySink {
    let recorder: Recorder
    let failAfter: Int?
    private var received = 0
    private var sum: UInt64 = 0
    private var inOrder = true
    private var smallest = Int.max
    private var largest = 0

    init(recorder: Recorder, failAfter: Int? = nil) {
        self.recorder = recorder
        self.failAfter = failAfter
    }

    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        for (i, byte) in chunk.enumerated() {
            if byte != UInt8(truncatingIfNeeded: (received + i) % 251) { inOrder = false }
            sum += UInt64(byte)
        }
        received += chunk.count
        smallest = min(smallest, chunk.count)
        largest = max(largest, chunk.count)
        if let failAfter, received >= failAfter {
            recorder.note("rejected at \(received)")
            return HTTPResponse(status: 413, body: .bytes(Array("too large".utf8)))
        }
        return nil
    }

    func finish() -> HTTPResponse {
        recorder.note("finish")
        recorder.note("chunks \(smallest)...\(largest)")
        return HTTPResponse(status: 201, body: .bytes(Array("\(received) \(sum) \(inOrder)".utf8)))
    }

    func abort() { recorder.note("abort") }
    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
}

func temporaryFile(_ bytes: [UInt8]) throws -> String {
    let path = NSTemporaryDirectory() + "silo-transport-\(UUID().uuidString)"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// Runs `body` on a new thread and returns a semaphore signalled when it ends. (GCD's global pool does not add
/// threads for ones blocked in socket calls on Linux, so blocking clients there would run one after another.)
@discardableResult
func startThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.start()
    return done
}
