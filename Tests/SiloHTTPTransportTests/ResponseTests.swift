import Foundation
import SiloHTTP
import SiloTesting
import Synchronization
import Testing

/// Produces `total` pattern bytes in pieces of at most `piece`; can fail after `failAt` bytes.
final class PatternProducer: ResponseBodyProducer {
    let total: Int
    let piece: Int
    let recorder: Recorder
    private var sent = 0

    init(total: Int, piece: Int = 10_000, recorder: Recorder) {
        self.total = total
        self.piece = piece
        self.recorder = recorder
    }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, piece, total - sent)
        for i in 0..<count { buffer[i] = UInt8(truncatingIfNeeded: (sent + i) % 251) }
        sent += count
        return count
    }

    func close() { recorder.note("closed") }
}

@Suite struct ResponseTests {
    @Test(arguments: Engine.allCases) func fileIsSentWholeAndFromAnOffset(engine: Engine) throws {
        let content = patternBytes(300_000)
        let path = try temporaryFile(content)
        defer { unlink(path) }
        try withServer(
            engine,
            { head in
                let fd = open(path, O_RDONLY)
                let body: ResponseBody =
                    head.rawPath == "/part"
                    ? .file(OwnedFileDescriptor(fd), offset: 1_000, length: 5_000)
                    : .file(OwnedFileDescriptor(fd), offset: 0, length: Int64(content.count))
                return .respond(
                    HTTPResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: body))
            }
        ) { _, client in
            let whole = try client.send(method: "GET", target: "/whole")
            #expect(whole.status == 200)
            #expect(whole.headers["Content-Length"] == "\(content.count)")
            #expect(whole.body == content)

            let part = try client.send(method: "GET", target: "/part")
            #expect(part.body == Array(content[1_000..<6_000]))

            let head = try client.send(method: "HEAD", target: "/whole")
            #expect(head.headers["Content-Length"] == "\(content.count)")
            #expect(head.body.isEmpty)
            // The connection is still in step after HEAD.
            #expect(try client.send(method: "GET", target: "/part").body.count == 5_000)
            #expect(client.connectionsOpened == 1)
        }
    }

    @Test(arguments: Engine.allCases) func streamWithKnownLength(engine: Engine) throws {
        let recorder = Recorder()
        try withServer(
            engine,
            { _ in
                .respond(
                    HTTPResponse(
                        status: 200, body: .stream(length: 200_000, PatternProducer(total: 200_000, recorder: recorder))
                    ))
            }
        ) { _, client in
            let response = try client.send(method: "GET", target: "/s")
            #expect(response.headers["Content-Length"] == "200000")
            #expect(response.headers["Transfer-Encoding"] == nil)
            #expect(response.body == patternBytes(200_000))
            #expect(recorder.waitFor("closed"))
        }
    }

    @Test(arguments: Engine.allCases) func streamWithUnknownLengthIsChunked(engine: Engine) throws {
        let recorder = Recorder()
        try withServer(
            engine,
            { _ in
                .respond(
                    HTTPResponse(
                        status: 200, body: .stream(length: nil, PatternProducer(total: 150_001, recorder: recorder))))
            }
        ) { _, client in
            let response = try client.send(method: "GET", target: "/s")
            #expect(response.headers["Transfer-Encoding"]?.lowercased() == "chunked")
            #expect(response.body == patternBytes(150_001))
            #expect(recorder.waitFor("closed"))
            #expect(try client.send(method: "GET", target: "/s").body.count == 150_001)
            #expect(client.connectionsOpened == 1)
        }
    }

    @Test(arguments: Engine.allCases) func producerErrorCutsTheConnectionAndClosesTheProducer(engine: Engine) throws {
        struct Broken: Error {}
        final class FailingProducer: ResponseBodyProducer {
            let recorder: Recorder
            init(recorder: Recorder) { self.recorder = recorder }
            func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { throw Broken() }
            func close() { recorder.note("closed") }
        }
        let recorder = Recorder()
        try withServer(
            engine,
            { _ in
                .respond(HTTPResponse(status: 200, body: .stream(length: 1_000, FailingProducer(recorder: recorder))))
            }
        ) { _, client in
            #expect(throws: HTTPTestClientError.self) { try client.send(method: "GET", target: "/s") }
            #expect(recorder.waitFor("closed"))
        }
    }

    @Test(arguments: Engine.allCases) func headKeepsTheLengthOfBytesAndOfADeclaredLength(engine: Engine) throws {
        try withServer(
            engine,
            { head in
                if head.rawPath == "/declared" {
                    return .respond(HTTPResponse(status: 200, headers: ["Content-Length": "123456", "ETag": "\"e\""]))
                }
                return .respond(HTTPResponse(status: 200, body: .bytes(patternBytes(1234))))
            }
        ) { _, client in
            let bytes = try client.send(method: "HEAD", target: "/bytes")
            #expect(bytes.status == 200)
            #expect(bytes.headers["Content-Length"] == "1234")
            #expect(bytes.body.isEmpty)

            let declared = try client.send(method: "HEAD", target: "/declared")
            #expect(declared.headers["Content-Length"] == "123456")
            #expect(declared.headers["ETag"] == "\"e\"")
            #expect(declared.headers.values("Content-Length").count == 1)

            #expect(try client.send(method: "GET", target: "/bytes").body == patternBytes(1234))
            #expect(client.connectionsOpened == 1)
        }
    }

    /// A HEAD describing a body of unknown length (a thumbnail not made yet) declares neither a length nor chunked
    /// framing and sends nothing after its head: the next answer is read intact, on the same connection.
    @Test(arguments: Engine.allCases) func headOfAStreamOfUnknownLengthSendsNoFraming(engine: Engine) throws {
        let recorder = Recorder()
        try withServer(
            engine,
            { _ in
                .respond(
                    HTTPResponse(
                        status: 200, headers: ["ETag": "\"e\""],
                        body: .stream(length: nil, PatternProducer(total: 10, recorder: recorder))))
            }
        ) { _, client in
            let head = try client.send(method: "HEAD", target: "/s")
            #expect(head.status == 200)
            #expect(head.headers["ETag"] == "\"e\"")
            #expect(head.headers["Content-Length"] == nil)
            #expect(head.headers["Transfer-Encoding"] == nil)
            #expect(head.body.isEmpty)
            #expect(recorder.waitFor("closed"))
            #expect(try client.send(method: "GET", target: "/s").body == patternBytes(10))
            #expect(client.connectionsOpened == 1)
        }
    }

    @Test(arguments: Engine.allCases) func headersAndStatusAreSent(engine: Engine) throws {
        try withServer(
            engine,
            { _ in
                .respond(
                    HTTPResponse(
                        status: 308,
                        headers: [
                            "Range": "bytes=0-99", "X-Goog-Upload-Status": "active", "X-Multi": "a", "X-Multi": "b",
                        ]))
            }
        ) { _, client in
            let response = try client.send(method: "POST", target: "/r")
            #expect(response.status == 308)
            #expect(response.headers["Range"] == "bytes=0-99")
            #expect(response.headers["x-goog-upload-status"] == "active")
            #expect(response.headers.values("X-Multi") == ["a", "b"])
            #expect(response.headers["Content-Length"] == "0")
        }
    }
}

/// Headers formatted once (``HTTPHeaders/preformatted()``) reach the client exactly as the same headers built field
/// by field, and a changed copy never sends the stale formatting.
@Suite struct PreformattedHeaderTests {
    static let fields: HTTPHeaders = ["ETag": "\"abc\"", "Content-Type": "text/plain", "X-Goog-Generation": "7"]

    @Test func formattingIsDroppedOnChangeAndRefusedForTransportFields() {
        let formatted = Self.fields.preformatted()
        #expect(
            formatted.wireFormat == Array("ETag: \"abc\"\r\nContent-Type: text/plain\r\nX-Goog-Generation: 7\r\n".utf8))
        var changed = formatted
        changed.add("Content-Range", "bytes 0-1/2")
        #expect(changed.wireFormat == nil)
        var removed = formatted
        removed.remove("ETag")
        #expect(removed.wireFormat == nil)
        let framing: HTTPHeaders = ["Content-Length": "3", "A": "b"]
        #expect(framing.preformatted().wireFormat == nil)
        let dated: HTTPHeaders = ["Date": "Sun, 29 Nov 2026 00:00:00 GMT"]
        #expect(dated.preformatted().wireFormat == nil)
    }

    @Test(arguments: Engine.allCases) func preformattedHeadersAreSentAsBuilt(engine: Engine) throws {
        try withServer(
            engine,
            { head in
                let headers = head.rawPath == "/formatted" ? Self.fields.preformatted() : Self.fields
                return .respond(HTTPResponse(status: 200, headers: headers, body: .bytes(Array("hi".utf8))))
            }
        ) { _, client in
            let formatted = try client.send(method: "GET", target: "/formatted")
            let plain = try client.send(method: "GET", target: "/plain")
            for response in [formatted, plain] {
                #expect(response.status == 200)
                #expect(response.body == Array("hi".utf8))
                #expect(response.headers["ETag"] == "\"abc\"")
                #expect(response.headers["Content-Type"] == "text/plain")
                #expect(response.headers["X-Goog-Generation"] == "7")
                #expect(response.headers["Content-Length"] == "2")
                #expect(response.headers["Date"] != nil)
            }
            #expect(formatted.headers.fields.map(\.name) == plain.headers.fields.map(\.name))
            #expect(client.connectionsOpened == 1)
        }
    }
}
