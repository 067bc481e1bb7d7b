import Foundation
import SiloCore
import SiloHTTP
import SiloTesting
import Synchronization
import Testing

@Suite struct ServerLifecycleTests {
    @Test(arguments: Engine.allCases) func keepAliveReusesOneConnectionFor100Requests(engine: Engine) throws {
        try withServer(engine, { head in text(head.rawPath) }) { _, client in
            for i in 0..<100 {
                let response = try client.send(method: "GET", target: "/n/\(i)")
                #expect(response.text == "/n/\(i)")
            }
            #expect(client.connectionsOpened == 1)
        }
    }

    @Test(arguments: Engine.allCases) func concurrentClientsOnSeveralThreads(engine: Engine) throws {
        try withServer(engine, { head in text(head.rawPath) }) { server, _ in
            let failures = Recorder()
            var threads: [DispatchSemaphore] = []
            for t in 0..<6 {
                threads.append(
                    startThread {
                        let client = HTTPTestClient(port: server.port)
                        for i in 0..<50 {
                            do {
                                let body = try client.send(
                                    method: i % 2 == 0 ? "GET" : "PUT", target: "/t\(t)/\(i)",
                                    body: i % 2 == 0 ? [] : [1, 2]
                                ).text
                                if body != "/t\(t)/\(i)" { failures.note("wrong body \(body)") }
                            } catch {
                                failures.note("\(error)")
                            }
                        }
                        client.disconnect()
                    })
            }
            for done in threads { #expect(done.wait(timeout: .now() + 30) == .success) }
            #expect(failures.all.isEmpty)
        }
    }

    @Test(arguments: Engine.allCases) func shutdownWaitsForASlowRequest(engine: Engine) throws {
        let recorder = Recorder()
        var settings = TransportSettings()
        settings.threadPoolSize = 2
        let server = try makeServer(engine, settings, logger: .disabled) { _ in
            recorder.note("started")
            usleep(600_000)
            return text("slow done")
        }
        let port = server.port
        let result = ResultBox()
        let done = startThread {
            let client = HTTPTestClient(port: port)
            result.set(Result { try client.send(method: "GET", target: "/slow") })
        }
        #expect(recorder.waitFor("started"))
        let start = Date()
        server.shutdown(drainTimeout: 5)
        let elapsed = Date().timeIntervalSince(start)
        #expect(done.wait(timeout: .now() + 5) == .success)
        let response = try result.get().get()
        #expect(response.status == 200)
        #expect(response.text == "slow done")
        #expect(response.headers["Connection"]?.lowercased() == "close")
        #expect(elapsed > 0.3)
        #expect(elapsed < 4)
        // Stopped: nothing listens any more.
        #expect(throws: HTTPTestClientError.self) { try HTTPTestClient(port: port).send(method: "GET", target: "/") }
        server.shutdown(drainTimeout: 1)  // a second call is harmless
    }

    @Test(arguments: Engine.allCases) func newConnectionsAreRefusedWhileDraining(engine: Engine) throws {
        let recorder = Recorder()
        var settings = TransportSettings()
        settings.threadPoolSize = 2
        let server = try makeServer(engine, settings) { _ in
            recorder.note("started")
            usleep(800_000)
            return text("ok")
        }
        let port = server.port
        startThread { _ = try? HTTPTestClient(port: port).send(method: "GET", target: "/slow") }
        #expect(recorder.waitFor("started"))
        let stopped = startThread { server.shutdown(drainTimeout: 5) }
        usleep(200_000)
        #expect(throws: HTTPTestClientError.self) {
            try HTTPTestClient(port: port, timeoutSeconds: 2).send(method: "GET", target: "/late")
        }
        #expect(stopped.wait(timeout: .now() + 5) == .success)
    }

    @Test(arguments: Engine.allCases) func bindingABusyPortThrowsAClearError(engine: Engine) throws {
        try withServer(engine, { _ in text("first") }) { server, _ in
            var settings = TransportSettings()
            settings.port = server.port
            settings.threadPoolSize = 1
            do {
                _ = try makeServer(engine, settings, logger: .disabled) { _ in text("second") }
                Issue.record("binding a busy port succeeded")
            } catch let error as HTTPServerError {
                #expect(error.code == .addressInUse)
                #expect(error.message == "cannot bind 127.0.0.1:\(server.port): address already in use")
            }
        }
    }

    @Test(arguments: Engine.allCases) func nonNumericHostIsRejected(engine: Engine) throws {
        var settings = TransportSettings()
        settings.host = "example.invalid"
        #expect(throws: HTTPServerError.self) {
            _ = try makeServer(engine, settings, logger: .disabled) { _ in text("x") }
        }
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/net/if_inet6")), arguments: Engine.allCases)
    func servesIPv6Loopback(engine: Engine) throws {
        try withServer(
            engine,
            configure: {
                $0.host = "::1"
                $0.threadPoolSize = 1  // also covers the daemon without a worker pool
            }, { head in text(head.headers["Host"] ?? "") }
        ) { server, client in
            let response = try client.send(method: "GET", target: "/six")
            #expect(response.status == 200)
            #expect(response.text == "[::1]:\(server.port)")
        }
    }
}

/// Hands a result from a background thread to the test.
final class ResultBox: Sendable {
    private let value = Mutex<Result<TestResponse, any Error>?>(nil)
    func set(_ result: Result<TestResponse, any Error>) { value.withLock { $0 = result } }
    func get() throws -> Result<TestResponse, any Error> {
        struct NoResult: Error {}
        guard let result = value.withLock({ $0 }) else { throw NoResult() }
        return result
    }
}
