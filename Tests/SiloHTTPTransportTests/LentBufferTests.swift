#if os(Linux)
import Foundation
import SiloEpollHTTP
import SiloHTTP
import SiloTesting
import Testing

/// A sink that lends its buffers (``RequestBodySink/nextChunkBuffer()``): the epoll transport reads body bytes
/// straight into them and hands each over once full or at the body's end, over a real socket.
@Suite struct LentBufferTests {
    /// Lends two buffers in turn, as an appender with one batch in flight would; checks the pattern, and counts the
    /// chunks that arrived in place and those copied from elsewhere.
    private final class LendingSink: RequestBodySink {
        let inner: PatternSink
        let recorder: Recorder
        private let buffers: [UnsafeMutableRawBufferPointer]
        private var next = 0
        private var lentOut: UnsafeMutableRawBufferPointer?
        private var inPlace = 0
        private var elsewhere = 0
        /// Buffers still to lend; nil for any number. A sink that stops lending mid-body (the upload fault sink past
        /// its point, a sink that has refused the rest) leaves the transport to its own buffers.
        private var lendsLeft: Int?

        init(_ inner: PatternSink, recorder: Recorder, bufferBytes: Int, lends: Int? = nil) {
            self.inner = inner
            self.recorder = recorder
            self.lendsLeft = lends
            buffers = (0..<2).map { _ in .allocate(byteCount: bufferBytes, alignment: 4096) }
        }

        deinit { for buffer in buffers { buffer.deallocate() } }

        func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? {
            if let left = lendsLeft {
                guard left > 0 else { return nil }
                lendsLeft = left - 1
            }
            let buffer = buffers[next]
            next = 1 - next
            lentOut = buffer
            return buffer
        }

        func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
            if let lentOut, chunk.baseAddress == UnsafeRawPointer(lentOut.baseAddress), chunk.count <= lentOut.count {
                inPlace += 1
            } else {
                elsewhere += 1
            }
            lentOut = nil
            return inner.receive(chunk)
        }

        func finish() -> HTTPResponse {
            recorder.note("in place \(inPlace), elsewhere \(elsewhere)")
            return inner.finish()
        }

        func abort() { inner.abort() }
    }

    private func withServer(
        bufferBytes: Int, lends: Int? = nil, _ recorder: Recorder, _ body: (EpollHTTPServer) throws -> Void
    ) throws {
        var configuration = EpollHTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.threadCount = 1
        let handler = ClosureHandler { head in
            head.rawPath == "/after"
                ? .respond(HTTPResponse(status: 200, body: .bytes(Array("after".utf8))))
                : .readBody(
                    LendingSink(
                        PatternSink(recorder: recorder), recorder: recorder, bufferBytes: bufferBytes, lends: lends))
        }
        let server = try EpollHTTPServer(handler: handler, configuration: configuration, logger: testLogger)
        defer { server.shutdown(drainTimeout: 2) }
        try body(server)
    }

    /// The sink's note: chunks that arrived in its buffers, and elsewhere.
    private func counts(_ recorder: Recorder) throws -> (Int, Int) {
        let note = try #require(recorder.all.first { $0.hasPrefix("in place ") })
        let numbers = note.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        try #require(numbers.count == 2)
        return (numbers[0], numbers[1])
    }

    @Test func aBodyWithALengthArrivesInTheSinksBuffersOneCallPerBuffer() throws {
        let recorder = Recorder()
        let bufferBytes = 1 << 20
        try withServer(bufferBytes: bufferBytes, recorder) { server in
            let socket = try RawSocket(port: server.port)
            let body = patternBytes(5_000_000)
            let sum = body.reduce(UInt64(0)) { $0 + UInt64($1) }
            try socket.write(Array("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8))
            // In pieces smaller than the buffer, with pauses, so that reads return less than a buffer.
            for piece in stride(from: 0, to: body.count, by: 100_000) {
                try socket.write(Array(body[piece..<min(body.count, piece + 100_000)]))
                usleep(1_000)
            }
            try socket.write(Array("GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            let received = String(decoding: try socket.readUntilClose(), as: UTF8.self)
            let answer = try #require(received.range(of: "\r\n\r\n\(body.count) \(sum) true"))
            #expect(received.range(of: "\r\n\r\nafter", range: answer.upperBound..<received.endIndex) != nil)
            // Five full buffers hold the body; a transport handing over each read would make about fifty calls. The
            // head's read may carry the first body bytes, which are delivered from the head buffer.
            let (inPlace, elsewhere) = try counts(recorder)
            let buffers = (body.count + bufferBytes - 1) / bufferBytes
            #expect(elsewhere <= 1)
            #expect(inPlace >= buffers && inPlace + elsewhere <= buffers + 1)
        }
    }

    /// The socket's low-water mark, raised while a lent buffer fills, never waits for more than the body has left,
    /// and is back at one byte for the next request: a short tail after a pause arrives, and a small request sent
    /// only once the answer came (keep-alive) is answered at once, not when the idle timeout ends the connection.
    @Test func aPausedTailArrivesAndTheNextRequestIsNotHeldBack() throws {
        let recorder = Recorder()
        try withServer(bufferBytes: 1 << 20, recorder) { server in
            let socket = try RawSocket(port: server.port, receiveTimeoutSeconds: 5)
            let body = patternBytes(700_000)
            let sum = body.reduce(UInt64(0)) { $0 + UInt64($1) }
            try socket.write(Array("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8))
            try socket.write(Array(body[0..<650_000]))
            usleep(300_000)
            try socket.write(Array(body[650_000...]))
            let first = try socket.readUntil("\(body.count) \(sum) true")
            #expect(first.hasPrefix("HTTP/1.1 201"))
            try socket.write("GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let started = ContinuousClock.now
            let second = String(decoding: try socket.readUntilClose(), as: UTF8.self)
            #expect(second.contains("\r\n\r\nafter"))
            // Not a timing assert on the server: the receive timeout (5 s) would end a held-back request first.
            #expect(ContinuousClock.now - started < .seconds(4))
        }
    }

    /// A sink that stops lending mid-body leaves the low-water mark a lent buffer raised: the rest of the body is
    /// read into the transport's buffers, and its tail — less than the mark — must still wake the loop. (It did not:
    /// google-cloud-storage's upload under `return-503-after-256K` waited 60 s for its client timeout.)
    @Test func aSinkThatStopsLendingStillGetsTheWholeBody() throws {
        let recorder = Recorder()
        try withServer(bufferBytes: 1 << 20, lends: 1, recorder) { server in
            let socket = try RawSocket(port: server.port, receiveTimeoutSeconds: 5)
            let body = patternBytes(2_000_000)
            let sum = body.reduce(UInt64(0)) { $0 + UInt64($1) }
            try socket.write(Array("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8))
            // The lent buffer fills from the first piece; the rest follows once the loop has read it.
            try socket.write(Array(body[0..<(1 << 20)]))
            usleep(200_000)
            try socket.write(Array(body[(1 << 20)...]))
            let answer = try socket.readUntil("\(body.count) \(sum) true")
            #expect(answer.hasPrefix("HTTP/1.1 201"))
        }
    }

    @Test func aChunkedBodyIsSqueezedInPlaceAndWhatFollowsIsServed() throws {
        let recorder = Recorder()
        try withServer(bufferBytes: 64 << 10, recorder) { server in
            let socket = try RawSocket(port: server.port)
            let body = patternBytes(1_000_000)
            let sum = body.reduce(UInt64(0)) { $0 + UInt64($1) }
            var bytes = Array("PUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
            for piece in stride(from: 0, to: body.count, by: 10_000) {
                let part = body[piece..<min(body.count, piece + 10_000)]
                bytes += Array("\(String(part.count, radix: 16))\r\n".utf8) + part + Array("\r\n".utf8)
            }
            bytes += Array("0\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
            try socket.write(bytes)
            let received = String(decoding: try socket.readUntilClose(), as: UTF8.self)
            let answer = try #require(received.range(of: "\r\n\r\n\(body.count) \(sum) true"))
            #expect(received.range(of: "\r\n\r\nafter", range: answer.upperBound..<received.endIndex) != nil)
            let (inPlace, elsewhere) = try counts(recorder)
            #expect(elsewhere <= 1)
            #expect(inPlace >= 1_000_000 / (64 << 10))
        }
    }
}
#endif
