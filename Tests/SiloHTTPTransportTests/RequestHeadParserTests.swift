import SiloHTTP
import Testing

@testable import SiloEpollHTTP

/// The epoll transport's head parser and chunked decoder, without sockets.
@Suite struct RequestHeadParserTests {
    private func parse(_ text: String, resumeAt: Int = 0) -> HeadParseResult {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { RequestHeadParser.parse($0, resumeAt: resumeAt) }
    }

    private func parsed(_ text: String) throws -> (ParsedRequest, Int) {
        guard case .complete(let request, let consumed) = parse(text) else {
            Issue.record("not complete: \(text.debugDescription)")
            throw ParseFailed()
        }
        return (request, consumed)
    }

    private func status(_ text: String) -> Int? {
        if case .invalid(let status, _) = parse(text) { return status }
        return nil
    }

    private struct ParseFailed: Error {}

    @Test func simpleGet() throws {
        let text = "GET /v0/b/x/o/a%2Fb?alt=media&x=1 HTTP/1.1\r\nHost: h:1\r\nX-A:  padded value \t\r\n\r\nNEXT"
        let (request, consumed) = try parsed(text)
        #expect(consumed == text.utf8.count - 4)
        #expect(request.head.method == "GET")
        #expect(request.head.rawPath == "/v0/b/x/o/a%2Fb")
        #expect(request.head.rawQuery == "alt=media&x=1")
        #expect(request.head.version == "HTTP/1.1")
        #expect(request.head.headers.fields.map(\.name) == ["Host", "X-A"])
        #expect(request.head.headers["x-a"] == "padded value")
        #expect(request.framing == .none)
        #expect(request.keepAlive)
        #expect(!request.awaitsContinue)
    }

    @Test func framingAndConnection() throws {
        #expect(try parsed("PUT / HTTP/1.1\r\nContent-Length: 42\r\n\r\n").0.framing == .length(42))
        #expect(try parsed("PUT / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").0.framing == .none)
        #expect(try parsed("PUT / HTTP/1.1\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n").0.framing == .length(7))
        #expect(try parsed("PUT / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").0.framing == .chunked)
        #expect(try parsed("GET / HTTP/1.1\r\nConnection: keep-alive, CLOSE\r\n\r\n").0.keepAlive == false)
        #expect(try parsed("GET / HTTP/1.0\r\n\r\n").0.keepAlive == false)
        #expect(try parsed("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").0.keepAlive)
        #expect(try parsed("PUT / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n").0.awaitsContinue)
        #expect(
            try parsed("PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n").0.awaitsContinue == false)
        #expect(try parsed("HEAD / HTTP/1.1\r\n\r\n").0.isHeadMethod)
    }

    @Test func bareLineFeedsAndLeadingEmptyLines() throws {
        let (request, consumed) = try parsed("\r\n\nGET /a HTTP/1.1\nHost: x\n\n")
        #expect(request.head.rawPath == "/a")
        #expect(consumed == "\r\n\nGET /a HTTP/1.1\nHost: x\n\n".utf8.count)
    }

    @Test func incompleteHeadsResumeWhereTheyStopped() throws {
        let whole = "GET /resume HTTP/1.1\r\nHost: x\r\nX-Long: abcdef\r\n\r\n"
        var resume = 0
        for end in 1..<whole.utf8.count {
            let prefix = String(whole.utf8.prefix(end))!
            switch parse(prefix, resumeAt: resume) {
            case .incomplete(let next):
                #expect(next >= resume && next <= end)
                resume = next
            case .complete, .invalid:
                Issue.record("finished early at \(end)")
            }
        }
        guard case .complete(let request, _) = parse(whole, resumeAt: resume) else {
            Issue.record("not complete after resuming")
            return
        }
        #expect(request.head.headers["X-Long"] == "abcdef")
        #expect(status("") == nil)
        if case .incomplete = parse("\r\n\r\n") {} else { Issue.record("empty lines alone are not a head") }
    }

    @Test(arguments: [
        ("GET / HTTP/1.1 extra\r\n\r\n", 400),
        ("GET /\u{7F} HTTP/1.1\r\n\r\n", 400),
        ("GET /a\tb HTTP/1.1\r\n\r\n", 400),
        (" GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / http/1.1\r\n\r\n", 400),
        ("GET / HTTP/3.0\r\n\r\n", 505),
        ("GET / HTTP/1.10\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA : b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA: b\u{0}c\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\tcontinued\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nContent-Length: \r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nTransfer-Encoding: \r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501),
        ("PUT / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", 501),
        ("PUT / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        // HTTP/1.0 has no transfer codings.
        ("PUT / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    ])
    func adversarialHeadsAreRefused(text: String, expected: Int) {
        #expect(status(text) == expected, "\(text.debugDescription)")
    }

    /// fuzz/RESULTS.md HEAD-1 and HEAD-3: line breaks before the request line are skipped in one pass, and the
    /// answer does not depend on how the bytes were cut.
    @Test func leadingLineBreaksAreSkippedOnceAndWhateverTheCuts() throws {
        let many = String(repeating: "\n", count: 65_000) + "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        let (request, consumed) = try parsed(many)
        #expect(request.head.rawPath == "/")
        #expect(consumed == many.utf8.count)
        for text in ["\n\r\r\n\n", "\r\n\r\n\r"] {
            guard case .incomplete = parse(text) else {
                Issue.record("only line breaks so far is not a head yet: \(text.debugDescription)")
                continue
            }
        }
        let bytes: [UInt8] = [
            0x0a, 0x0d, 0x0d, 0x0a, 0x0a, 0x1d, 0x0a, 0x05, 0x0a, 0x0a, 0x0d, 0x0a, 0x0d, 0x0a, 0x1d, 0x0a,
        ]
        let whole = bytes.withUnsafeBytes { RequestHeadParser.parse($0) }
        var resume = 0
        var bytewise: HeadParseResult = .incomplete(resumeAt: 0)
        for count in 1...bytes.count {
            bytewise = bytes.withUnsafeBytes {
                RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: $0[0..<count]), resumeAt: resume)
            }
            guard case .incomplete(let next) = bytewise else { break }
            resume = next
        }
        guard case .invalid(let a, _) = whole, case .invalid(let b, _) = bytewise else {
            Issue.record("both refuse: \(whole) / \(bytewise)")
            return
        }
        #expect(a == b)
    }

    @Test func aTargetThatIsNotUTF8IsRefused() {
        let bytes = Array("GET /a".utf8) + [0xFF, 0xC0] + Array(" HTTP/1.1\r\n\r\n".utf8)
        guard case .invalid(let status, _) = bytes.withUnsafeBytes({ RequestHeadParser.parse($0) }) else {
            Issue.record("accepted a target that is not UTF-8")
            return
        }
        #expect(status == 400)
    }

    @Test func nonUTF8BytesDoNotCrash() throws {
        var bytes = Array("GET /\u{00e9} HTTP/1.1\r\nX: ".utf8) + [0xFF, 0xFE, 0x80] + Array("\r\n\r\n".utf8)
        let result = bytes.withUnsafeBytes { RequestHeadParser.parse($0) }
        guard case .complete(let request, _) = result else {
            Issue.record("not parsed")
            return
        }
        #expect(request.head.rawPath == "/\u{00e9}")
        #expect(request.head.headers["X"]?.isEmpty == false)
        bytes = [0x0A]
        if case .incomplete = bytes.withUnsafeBytes({ RequestHeadParser.parse($0) }) {} else { Issue.record("LF") }
    }

    @Test func randomBytesNeverCrash() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("GET /HTTP1.0:\r\n \t,;chunked-Length0123456789".utf8)
        for _ in 0..<5000 {
            let count = Int.random(in: 0...200, using: &generator)
            let bytes = (0..<count).map { _ in
                Bool.random(using: &generator)
                    ? alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]
                    : UInt8.random(in: 0...255, using: &generator)
            }
            _ = bytes.withUnsafeBytes { RequestHeadParser.parse($0) }
            var decoder = ChunkedDecoder()
            var index = 0
            bytes.withUnsafeBytes { raw in
                var steps = 0
                while steps < 1000 {
                    steps += 1
                    switch decoder.next(raw, &index) {
                    case .data: continue
                    default: return
                    }
                }
            }
        }
    }

    private func decode(_ text: String, pieceSize: Int) -> (body: [UInt8], step: ChunkedDecoder.Step, rest: Int) {
        let bytes = Array(text.utf8)
        var decoder = ChunkedDecoder()
        var body: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let piece = Array(bytes[offset..<min(bytes.count, offset + pieceSize)])
            var index = 0
            let outcome: ChunkedDecoder.Step = piece.withUnsafeBytes { raw in
                while true {
                    let step = decoder.next(raw, &index)
                    if case .data(let range) = step {
                        body += raw[range]
                        continue
                    }
                    return step
                }
            }
            switch outcome {
            case .needMore: offset += piece.count
            case .end, .invalid: return (body, outcome, bytes.count - offset - index)
            case .data: break
            }
        }
        return (body, .needMore, 0)
    }

    @Test(arguments: [1, 2, 3, 7, 1000])
    func chunkedBodiesDecodeAtAnySplit(pieceSize: Int) {
        let text =
            "5;name=value\r\nhello\r\n6\r\n world\r\nA \r\n0123456789\r\n0\r\nTrailer: yes\r\nMore: x\r\n\r\nNEXT"
        let result = decode(text, pieceSize: pieceSize)
        #expect(String(decoding: result.body, as: UTF8.self) == "hello world0123456789")
        #expect(result.step == .end)
        #expect(result.rest == 4)
    }

    @Test(arguments: [
        "g\r\n", "\r\n", "5\r\nhelloXX", "5\r\nhello\r\nzz", "10000000000000000\r\n", "5\nhello\r\n0\r\nX: 1\r\n\rY",
        "5;\u{1}\r\n",
        // Bare LF (or CR) where the framing has a line end: after the size, an extension, the data, a trailer
        // line, and as the last line (llhttp refuses each).
        "5\nhello\r\n0\r\n\r\n", "5;a=b\nhello\r\n", "5\r\nhello\n0\r\n\r\n", "0\n\r\n", "0\r\n\n",
        "0\r\nX: 1\n\r\n", "0\r\nX: 1\r\r\n\r\n", "0\r\nX: 1\rY\r\n\r\n",
    ])
    func badChunkedFramingIsInvalid(text: String) {
        if case .invalid = decode(text, pieceSize: 3).step {
        } else {
            Issue.record("accepted \(text.debugDescription)")
        }
    }
}
