#if os(Linux)
import Foundation
import Glibc
import SiloCore
import SiloEpollHTTP
import SiloHTTP
import SiloTesting
import Synchronization
import Testing

/// Handler calls that block run on the epoll transport's workers, never on its event loop: with one loop, a
/// request whose `begin`, sink or producer waits (on a gate the test holds shut) leaves every other connection
/// served. Each test would hang its second client on a transport that ran the call on the loop (the client's
/// timeout then fails it).
@Suite struct WorkerPoolTests {
    /// A handler whose inline answers and blocking answers are two closures.
    private struct SplitHandler: HTTPHandler {
        let inline: @Sendable (HTTPRequestHead) -> RequestDisposition?
        let blocking: @Sendable (HTTPRequestHead) -> RequestDisposition
        /// For a head it names: what `beginInline` defers instead of answering.
        var deferred: @Sendable (HTTPRequestHead) -> (any DeferredBegin)? = { _ in nil }
        func makeInlineAnswerer() -> (any InlineAnswerer)? { Answerer(handler: self) }
        func begin(_ head: HTTPRequestHead) -> RequestDisposition { blocking(head) }

        final class Answerer: InlineAnswerer {
            let handler: SplitHandler
            init(handler: SplitHandler) { self.handler = handler }
            func beginInline(_ head: HTTPRequestHead) -> InlineDisposition {
                if let rest = handler.deferred(head) { return .deferred(rest) }
                return handler.inline(head).map(InlineDisposition.answered) ?? .declined
            }
        }
    }

    /// The rest of a deferred `begin`: runs `body`.
    private final class Rest: DeferredBegin {
        let body: () -> RequestDisposition
        init(_ body: @escaping () -> RequestDisposition) { self.body = body }
        func begin() -> RequestDisposition { body() }
    }

    /// Shut until opened; a wait gives up after 10 s so a broken test ends instead of hanging.
    private final class Gate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        private let opened = Atomic<Bool>(false)
        func wait() {
            if opened.load(ordering: .acquiring) { return }
            _ = semaphore.wait(timeout: .now() + 10)
            semaphore.signal()
        }
        func open() {
            opened.store(true, ordering: .releasing)
            semaphore.signal()
        }
    }

    /// A sink whose first `receive` waits at the gate.
    private final class GatedSink: RequestBodySink {
        let gate: Gate
        let recorder: Recorder
        private var received = 0
        init(gate: Gate, recorder: Recorder) {
            self.gate = gate
            self.recorder = recorder
        }
        func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
            if received == 0 {
                recorder.note("receiving")
                gate.wait()
            }
            received += chunk.count
            return nil
        }
        func finish() -> HTTPResponse {
            recorder.note("finish")
            return HTTPResponse(status: 201, body: .bytes(Array("\(received)".utf8)))
        }
        func abort() { recorder.note("abort") }
        func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
    }

    /// A streamed body whose first block waits at the gate.
    private final class GatedProducer: ResponseBodyProducer {
        let gate: Gate
        let recorder: Recorder
        private var sent = false
        init(gate: Gate, recorder: Recorder) {
            self.gate = gate
            self.recorder = recorder
        }
        func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            guard !sent else { return 0 }
            recorder.note("producing")
            gate.wait()
            sent = true
            let text = Array("streamed".utf8)
            buffer.copyBytes(from: text)
            return text.count
        }
        func close() { recorder.note("closed") }
    }

    private func withEpoll(
        workers: Int = 4, queueLimit: Int = 1024, inline: @escaping @Sendable (HTTPRequestHead) -> RequestDisposition?,
        blocking: @escaping @Sendable (HTTPRequestHead) -> RequestDisposition,
        deferred: @escaping @Sendable (HTTPRequestHead) -> (any DeferredBegin)? = { _ in nil },
        _ body: (EpollHTTPServer) throws -> Void
    ) throws {
        var configuration = EpollHTTPServer.Configuration(host: "127.0.0.1", port: 0)
        // One loop: anything that blocked it would stall every other connection.
        configuration.threadCount = 1
        configuration.workerCount = workers
        configuration.workerQueueLimit = queueLimit
        let server = try EpollHTTPServer(
            handler: SplitHandler(inline: inline, blocking: blocking, deferred: deferred), configuration: configuration,
            logger: testLogger)
        defer { server.shutdown(drainTimeout: 2) }
        try body(server)
    }

    /// A GET on a new connection, answered within 5 s.
    private func quickGet(_ port: Int, _ target: String = "/fast") throws -> TestResponse {
        let client = HTTPTestClient(port: port, timeoutSeconds: 5)
        defer { client.disconnect() }
        return try client.send(method: "GET", target: target)
    }

    @Test func aBlockingBeginLeavesOtherConnectionsServed() throws {
        let gate = Gate()
        let recorder = Recorder()
        try withEpoll(
            inline: { _ in nil },
            blocking: { head in
                if head.rawPath == "/block" {
                    recorder.note("blocked")
                    gate.wait()
                }
                return text("answer \(head.rawPath)")
            }
        ) { server in
            defer { gate.open() }
            let blocked = Mutex<String?>(nil)
            let done = startThread {
                let answer = try? HTTPTestClient(port: server.port).send(method: "GET", target: "/block")
                blocked.withLock { $0 = answer?.text }
            }
            #expect(recorder.waitFor("blocked"))
            // The loop is free while a worker waits: this request goes to another worker and is answered.
            let answer1 = try quickGet(server.port)
            #expect(answer1.text == "answer /fast")
            #expect(blocked.withLock { $0 } == nil)
            gate.open()
            #expect(done.wait(timeout: .now() + 5) == .success)
            #expect(blocked.withLock { $0 } == "answer /block")
        }
    }

    @Test func beginRunsOnAWorkerAndBeginInlineOnTheLoop() throws {
        let threads = Mutex<(inline: [UInt], blocking: [UInt])>(([], []))
        try withEpoll(
            inline: { head in
                threads.withLock { $0.inline.append(UInt(pthread_self())) }
                return head.rawPath == "/cached" ? text("hit") : nil
            },
            blocking: { _ in
                threads.withLock { $0.blocking.append(UInt(pthread_self())) }
                return text("miss")
            }
        ) { server in
            let client = HTTPTestClient(port: server.port)
            let answer2 = try client.send(method: "GET", target: "/cached")
            #expect(answer2.text == "hit")
            let answer3 = try client.send(method: "GET", target: "/other")
            #expect(answer3.text == "miss")
        }
        let seen = threads.withLock { $0 }
        #expect(seen.inline.count == 2 && seen.blocking.count == 1)
        #expect(Set(seen.inline).count == 1)
        #expect(!seen.inline.contains(seen.blocking[0]))
    }

    /// What `beginInline` defers runs on a worker, once, instead of `begin` (which never sees that request), and
    /// while it waits the loop answers other connections inline.
    @Test func aDeferredBeginRunsOnAWorkerInsteadOfBegin() throws {
        let gate = Gate()
        let recorder = Recorder()
        let threads = Mutex<(inline: Set<UInt>, rest: [UInt], begun: [String])>(([], [], []))
        try withEpoll(
            inline: { head in
                threads.withLock { _ = $0.inline.insert(UInt(pthread_self())) }
                return head.rawPath == "/fast" ? text("inline") : nil
            },
            blocking: { head in
                threads.withLock { $0.begun.append(head.rawPath) }
                return text("begin")
            },
            deferred: { head in
                guard head.rawPath == "/deferred" else { return nil }
                threads.withLock { _ = $0.inline.insert(UInt(pthread_self())) }
                return Rest {
                    threads.withLock { $0.rest.append(UInt(pthread_self())) }
                    recorder.note("rest")
                    gate.wait()
                    return text("rest")
                }
            }
        ) { server in
            defer { gate.open() }
            let answer = Mutex<String?>(nil)
            let done = startThread {
                let response = try? HTTPTestClient(port: server.port).send(method: "GET", target: "/deferred")
                answer.withLock { $0 = response?.text }
            }
            #expect(recorder.waitFor("rest"))
            let fast = try quickGet(server.port)
            #expect(fast.text == "inline")
            gate.open()
            #expect(done.wait(timeout: .now() + 5) == .success)
            #expect(answer.withLock { $0 } == "rest")
        }
        let seen = threads.withLock { $0 }
        #expect(seen.rest.count == 1)
        #expect(seen.begun.isEmpty)
        #expect(seen.inline.count == 1)
        #expect(!seen.inline.contains(seen.rest[0]))
    }

    @Test func aBlockingSinkLeavesOtherConnectionsServed() throws {
        let gate = Gate()
        let recorder = Recorder()
        try withEpoll(
            inline: { _ in nil },
            blocking: { head in
                head.rawPath == "/upload" ? .readBody(GatedSink(gate: gate, recorder: recorder)) : text("fast")
            }
        ) { server in
            defer { gate.open() }
            let status = Mutex<Int?>(nil)
            let done = startThread {
                let answer = try? HTTPTestClient(port: server.port).send(
                    method: "PUT", target: "/upload", body: patternBytes(300_000))
                status.withLock { $0 = answer?.status }
            }
            #expect(recorder.waitFor("receiving"))
            let answer4 = try quickGet(server.port)
            #expect(answer4.text == "fast")
            gate.open()
            #expect(done.wait(timeout: .now() + 5) == .success)
            #expect(status.withLock { $0 } == 201)
            #expect(recorder.all.filter { $0 == "finish" }.count == 1)
            #expect(!recorder.contains("abort"))
        }
    }

    /// A sink slower than the network: the loop reads the next chunk while a worker has the previous one.
    private final class SlowSink: RequestBodySink {
        let inner: PatternSink
        init(_ inner: PatternSink) { self.inner = inner }
        func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
            usleep(2_000)
            return inner.receive(chunk)
        }
        func finish() -> HTTPResponse { inner.finish() }
        func abort() { inner.abort() }
        func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
    }

    @Test func aSlowSinkGetsEveryByteInOrderWhileTheLoopReadsAhead() throws {
        let recorder = Recorder()
        try withEpoll(
            inline: { head in head.rawPath == "/after" ? text("after") : nil },
            blocking: { _ in .readBody(SlowSink(PatternSink(recorder: recorder))) }
        ) { server in
            let socket = try RawSocket(port: server.port)
            let body = patternBytes(3_000_000)
            let sum = body.reduce(UInt64(0)) { $0 + UInt64($1) }
            var bytes = Array("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
            bytes += Array("PUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
            for piece in stride(from: 0, to: body.count, by: 100_000) {
                let part = body[piece..<min(body.count, piece + 100_000)]
                bytes += Array("\(String(part.count, radix: 16))\r\n".utf8) + part + Array("\r\n".utf8)
            }
            bytes += Array("0\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
            // The answers are small, so writing everything before reading cannot deadlock.
            try socket.write(bytes)
            let received = String(decoding: try socket.readUntilClose(), as: UTF8.self)
            let answer = "\(body.count) \(sum) true"
            let first = try #require(received.range(of: "\r\n\r\n\(answer)"))
            let second = try #require(
                received.range(of: "\r\n\r\n\(answer)", range: first.upperBound..<received.endIndex))
            #expect(received.range(of: "\r\n\r\nafter", range: second.upperBound..<received.endIndex) != nil)
            #expect(recorder.all.filter { $0 == "finish" }.count == 2)
            #expect(!recorder.contains("abort"))
        }
    }

    @Test func aBlockingProducerLeavesOtherConnectionsServed() throws {
        let gate = Gate()
        let recorder = Recorder()
        try withEpoll(
            inline: { head in head.rawPath == "/fast" ? text("fast") : nil },
            blocking: { _ in
                .respond(
                    HTTPResponse(status: 200, body: .stream(length: nil, GatedProducer(gate: gate, recorder: recorder)))
                )
            }
        ) { server in
            defer { gate.open() }
            let body = Mutex<String?>(nil)
            let done = startThread {
                let answer = try? HTTPTestClient(port: server.port).send(method: "GET", target: "/stream")
                body.withLock { $0 = answer?.text }
            }
            #expect(recorder.waitFor("producing"))
            let answer5 = try quickGet(server.port)
            #expect(answer5.text == "fast")
            gate.open()
            #expect(done.wait(timeout: .now() + 5) == .success)
            #expect(body.withLock { $0 } == "streamed")
            #expect(recorder.waitFor("closed"))
        }
    }

    @Test func aSaturatedPoolStillLetsInlineAnswersThroughAndCatchesUp() throws {
        let gate = Gate()
        let recorder = Recorder()
        // Two workers and a queue of two: six blocked requests fill both and leave two calls waiting on the loop.
        try withEpoll(
            workers: 2, queueLimit: 2,
            inline: { head in head.rawPath == "/cached" ? text("hit") : nil },
            blocking: { head in
                recorder.note("begin \(head.rawPath)")
                gate.wait()
                return text("done \(head.rawPath)")
            }
        ) { server in
            defer { gate.open() }
            let answers = Recorder()
            var threads: [DispatchSemaphore] = []
            for index in 0..<6 {
                threads.append(
                    startThread {
                        if let answer = try? HTTPTestClient(port: server.port).send(method: "GET", target: "/\(index)")
                        {
                            answers.note(answer.text)
                        }
                    })
            }
            // Both workers are held; give the other four requests a moment to arrive and queue behind them.
            let deadline = Date().addingTimeInterval(5)
            while recorder.all.count < 2 && Date() < deadline { usleep(5_000) }
            usleep(200_000)
            #expect(recorder.all.count == 2)
            let answer6 = try quickGet(server.port, "/cached")
            #expect(answer6.text == "hit")
            #expect(answers.all.isEmpty)
            gate.open()
            for thread in threads { #expect(thread.wait(timeout: .now() + 5) == .success) }
            #expect(Set(answers.all) == Set((0..<6).map { "done /\($0)" }))
        }
    }

    @Test func aClientGoneWhileItsSinkBlocksIsAbortedOnce() throws {
        let gate = Gate()
        let recorder = Recorder()
        try withEpoll(
            inline: { _ in nil },
            blocking: { _ in .readBody(GatedSink(gate: gate, recorder: recorder)) }
        ) { server in
            defer { gate.open() }
            let socket = try RawSocket(port: server.port)
            try socket.write("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            try socket.write(patternBytes(1000))
            #expect(recorder.waitFor("receiving"))
            socket.reset()
            // The reset arrives while the worker holds the sink; its result is dropped when it returns.
            usleep(100_000)
            gate.open()
            #expect(recorder.waitFor("abort"))
            // The server goes on serving.
            let answer7 = try quickGet(server.port, "/after")
            #expect(answer7.status == 201)
            #expect(recorder.waitFor("finish"))
            #expect(recorder.all.filter { $0 == "abort" }.count == 1)
            #expect(recorder.all.filter { $0 == "finish" }.count == 1)
            // The count drops just after the last answer is written, so the client may read it first.
            let deadline = Date().addingTimeInterval(5)
            while server.requestsInFlight != 0 && Date() < deadline { usleep(5_000) }
            #expect(server.requestsInFlight == 0)
        }
    }

    @Test func aClientGoneWhileBeginBlocksHasTheReturnedSinkAborted() throws {
        let gate = Gate()
        let recorder = Recorder()
        try withEpoll(
            inline: { _ in nil },
            blocking: { _ in
                recorder.note("begin")
                gate.wait()
                return .readBody(GatedSink(gate: gate, recorder: recorder))
            }
        ) { server in
            defer { gate.open() }
            let socket = try RawSocket(port: server.port)
            try socket.write("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            #expect(recorder.waitFor("begin"))
            socket.reset()
            usleep(100_000)
            gate.open()
            #expect(recorder.waitFor("abort"))
            usleep(100_000)
            #expect(recorder.all.filter { $0 == "abort" }.count == 1)
            #expect(!recorder.contains("receiving"))
        }
    }

    @Test func pipelinedRequestsKeepTheirOrderAcrossWorkersAndInlineAnswers() throws {
        try withEpoll(
            inline: { head in head.rawPath.hasPrefix("/inline") ? text(head.rawPath) : nil },
            blocking: { head in
                // Slower than the inline answers behind it, so a transport that answered out of turn would show.
                usleep(20_000)
                return text(head.rawPath)
            }
        ) { server in
            let socket = try RawSocket(port: server.port)
            let paths = ["/worker1", "/inline1", "/worker2", "/inline2", "/inline3", "/worker3"]
            var bytes = ""
            for path in paths { bytes += "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n" }
            bytes += "GET /inline-last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            try socket.write(bytes)
            let received = String(decoding: try socket.readUntilClose(), as: UTF8.self)
            var last = received.startIndex
            for path in paths + ["/inline-last"] {
                let found = try #require(received.range(of: "\r\n\r\n\(path)", range: last..<received.endIndex))
                last = found.upperBound
            }
        }
    }
}
#endif
