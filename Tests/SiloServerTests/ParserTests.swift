import SiloCore
import SiloHTTP
import SiloServer
import SiloTesting
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// The streaming parsers must give the same answer however the body is cut (architecture rule 21).
@Suite struct MultipartParserTests {
    static let boundary = "===============123=="
    static let media = pattern(70_000, seed: 3) + Array("\r\n--===============12".utf8) + pattern(500, seed: 4)
    static var body: [UInt8] {
        Array(
            "--\(boundary)\r\ncontent-type: application/json\r\n\r\n{\"name\":\"x\"}\r\n--\(boundary)\r\nContent-Type: image/png\r\nX-Extra: 1\r\n\r\n"
                .utf8)
            + media + Array("\r\n--\(boundary)--".utf8)
    }

    func parse(_ body: [UInt8], cuts: [Int]) throws -> (metadata: [UInt8], type: String?, media: [UInt8]) {
        var parser = MultipartParser(boundary: Self.boundary, maxMetadataBytes: 1 << 20)
        var metadata: [UInt8] = []
        var type: String?
        var media: [UInt8] = []
        var start = 0
        for end in cuts + [body.count] where end > start {
            try body[start..<end].withUnsafeBytes { chunk in
                try parser.feed(chunk) { event in
                    switch event {
                    case .metadata(let m): metadata = m
                    case .mediaStart(let t): type = t
                    case .mediaBytes(let b): media.append(contentsOf: b)
                    case .field, .fileStart: Issue.record("form events from a multipart/related parser")
                    }
                }
            }
            start = end
        }
        try parser.finish()
        return (metadata, type, media)
    }

    @Test func wholeBytewiseAndEverySplit() throws {
        let body = Self.body
        let whole = try parse(body, cuts: [])
        #expect(whole.metadata == Array("{\"name\":\"x\"}".utf8))
        #expect(whole.type == "image/png")
        #expect(whole.media == Self.media)
        #expect(try parse(body, cuts: Array(1..<body.count)).media == Self.media)
        // Every two-way split around the interesting region (headers and both delimiters).
        for cut in Array(0..<200) + Array((body.count - 600)..<body.count) {
            let split = try parse(body, cuts: [cut])
            #expect(split.media == Self.media && split.metadata == whole.metadata, "cut at \(cut)")
        }
    }

    /// gcsfs frames with bare LF and a quoted boundary; GCS accepts it, and mixed line endings, a preamble
    /// and an epilogue, with or without a final line break. Media ending in CR or LF keep those bytes.
    @Test(arguments: ["\n", "\r\n"])
    func bareLineFeedsAndPreamblesParseAtEveryCut(eol: String) throws {
        let b = Self.boundary
        for media in [Array("data".utf8), [], [0x0D], [0x0A], Array("ends with CR\r".utf8), Self.media] as [[UInt8]] {
            for (preamble, epilogue) in [("", ""), ("preamble text\(eol)", "\(eol)"), ("", "\(eol)epilogue")] {
                let body =
                    Array(
                        "\(preamble)--\(b)\(eol)Content-Type: application/json\(eol)\(eol){\"name\":\"x\"}\(eol)--\(b)\(eol)"
                            .utf8)
                    + Array("Content-Type: text/plain\(eol)\(eol)".utf8) + media
                    + Array("\(eol)--\(b)--\(epilogue)".utf8)
                let whole = try parse(body, cuts: [])
                #expect(whole.media == media, "\(eol.debugDescription) \(media.count)")
                #expect(whole.type == "text/plain")
                #expect(whole.metadata == Array("{\"name\":\"x\"}".utf8))
                let limit = media.count > 1000 ? 300 : body.count
                for cut in Array(1..<min(body.count, limit)) + Array(max(1, body.count - 300)..<body.count) {
                    #expect(try parse(body, cuts: [cut]).media == media, "cut at \(cut)")
                }
                if media.count < 1000 { #expect(try parse(body, cuts: Array(1..<body.count)).media == media) }
            }
        }
    }

    @Test func boundariesBareDoubleOrSingleQuoted() {
        for header in [
            "multipart/related; boundary=abc", "multipart/related; boundary=\"abc\"",
            "multipart/related; boundary='abc'", "Multipart/Related ; BOUNDARY = abc",
        ] {
            #expect(MultipartParser.boundary(fromContentType: header) == "abc", "\(header)")
        }
    }

    /// The outcome of parsing `body` cut at `cuts`: the media length, or the error.
    func outcome(_ body: [UInt8], cuts: [Int]) -> String {
        do {
            return "media \(try parse(body, cuts: cuts).media.count)"
        } catch {
            return "error \(error)"
        }
    }

    /// Found while writing fuzz/multipart: the preamble and part-header bounds (16 KiB) were checked against the
    /// bytes at hand rather than the stream, so one body was accepted whole and refused when a read ended inside the
    /// preamble or the headers (or the other way round), depending only on how TCP cut it.
    @Test(arguments: [15_000, 17_000])
    func preambleAndHeaderBoundsDoNotDependOnTheCuts(padding: Int) {
        let b = Self.boundary
        let filler = String(repeating: "p", count: padding)
        let longPreamble = Array("\(filler)\r\n--\(b)\r\n\r\n{}\r\n--\(b)\r\n\r\nm\r\n--\(b)--".utf8)
        let longHeaders = Array("--\(b)\r\nX-Pad: \(filler)\r\n\r\n{}\r\n--\(b)\r\n\r\nm\r\n--\(b)--".utf8)
        for body in [longPreamble, longHeaders] {
            let whole = outcome(body, cuts: [])
            #expect(padding < 16_384 ? whole == "media 1" : whole.hasPrefix("error"), "\(whole)")
            for cuts in [[1], [8_000], [14_900], [16_000], [16_383], [16_385], [16_500], [16_990], [17_010]]
                + [Array(stride(from: 1_000, to: body.count, by: 1_000))]
            {
                #expect(outcome(body, cuts: cuts.filter { $0 < body.count }) == whole, "cuts \(cuts)")
            }
        }
    }

    /// Found while writing fuzz/multipart: transport padding after a delimiter (spaces and tabs before its CRLF) was
    /// held in memory without limit, so one upload of endless spaces grew the server's memory with the body.
    @Test func transportPaddingIsBounded() {
        var parser = MultipartParser(boundary: Self.boundary, maxMetadataBytes: 1 << 20)
        let spaces = [UInt8](repeating: 0x20, count: 64 * 1024)
        #expect(throws: StorageError.self) {
            try Array("--\(Self.boundary)".utf8).withUnsafeBytes { try parser.feed($0) { _ in } }
            for _ in 0..<256 { try spaces.withUnsafeBytes { try parser.feed($0) { _ in } } }  // 16 MiB
        }
        // Padding within the bound is fine, however it is cut.
        let body = Array(
            "--\(Self.boundary) \t \r\n\r\n{}\r\n--\(Self.boundary)\t\r\n\r\nm\r\n--\(Self.boundary)--".utf8)
        #expect(outcome(body, cuts: []) == "media 1")
        #expect(outcome(body, cuts: Array(1..<body.count)) == "media 1")
    }

    @Test func boundaryHeader() {
        #expect(MultipartParser.boundary(fromContentType: "multipart/related; boundary=\"a=b\"") == "a=b")
        #expect(MultipartParser.boundary(fromContentType: "Multipart/Related;boundary=123") == "123")
        #expect(MultipartParser.boundary(fromContentType: "multipart/form-data; boundary=1") == nil)
        #expect(MultipartParser.boundary(fromContentType: "multipart/related") == nil)
        #expect(MultipartParser.boundary(fromContentType: nil) == nil)
    }
}

/// The multipart parser's fast path (media straight from the caller's buffer) must agree with the general path.
@Suite struct MultipartFastPathTests {
    static let boundary = "silo-bench-boundary"
    static let media: [UInt8] = {
        // Near-misses of the delimiter in the media, including one that is only a prefix and one missing a byte.
        var m = pattern(20_000, seed: 9)
        m += Array("\r\n--silo-bench-bound".utf8) + pattern(3_000, seed: 10)
        m += Array("\r\n-silo-bench-boundary".utf8) + pattern(3_000, seed: 11)
        m += Array("\r\r\n--silo-bench-boundar".utf8)
        return m
    }()
    static var body: [UInt8] {
        Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n{\"name\":\"f\"}\r\n--\(boundary)\r\n\r\n".utf8)
            + media + Array("\r\n--\(boundary)--\r\n".utf8)
    }

    func parse(_ body: [UInt8], first: Int, size: Int) throws -> [UInt8] {
        var parser = MultipartParser(boundary: Self.boundary, maxMetadataBytes: 1 << 20)
        var media: [UInt8] = []
        var start = 0
        var end = min(first, body.count)
        while start < body.count {
            try body[start..<end].withUnsafeBytes { chunk in
                try parser.feed(chunk) { event in
                    if case .mediaBytes(let b) = event { media.append(contentsOf: b) }
                }
            }
            start = end
            end = min(body.count, end + size)
        }
        try parser.finish()
        return media
    }

    @Test(arguments: [39, 40, 41, 47, 64, 100, 1000, 4096, 32768])
    func chunkSizesAndShifts(size: Int) throws {
        let body = Self.body
        // Shifting the first cut moves every later cut, so the seams land on each delimiter position.
        for first in 1...60 {
            #expect(try parse(body, first: first, size: size) == Self.media, "size \(size), first \(first)")
        }
    }

    @Test func delimiterSearchMatchesANaiveScan() {
        let needle = Array("\r\n--ab".utf8)
        var haystack = pattern(5000, seed: 5).map { $0 % 4 == 0 ? 0x0D : $0 }
        #expect(
            haystack.withUnsafeBytes { MultipartParser.firstDelimiter(needle, in: $0) }
                == find(needle, in: haystack, from: 0))
        haystack.replaceSubrange(4000..<4006, with: needle)
        haystack.replaceSubrange(4994..<5000, with: needle)
        #expect(haystack.withUnsafeBytes { MultipartParser.firstDelimiter(needle, in: $0) } == 4000)
        let tail = Array(haystack[4001...])
        #expect(tail.withUnsafeBytes { MultipartParser.firstDelimiter(needle, in: $0) } == 4994 - 4001)
        #expect(Array(needle.dropLast()).withUnsafeBytes { MultipartParser.firstDelimiter(needle, in: $0) } == nil)
        #expect([UInt8]().withUnsafeBytes { MultipartParser.firstDelimiter(needle, in: $0) } == nil)
    }
}

@Suite struct ByteRangeTests {
    @Test(
        arguments: [
            (nil, Int64(11), ByteRange.whole),
            ("bytes=0-4", 11, .partial(start: 0, end: 4)),
            ("bytes=6-", 11, .partial(start: 6, end: 10)),
            ("bytes=-3", 11, .partial(start: 8, end: 10)),
            ("bytes=-30", 11, .partial(start: 0, end: 10)),
            ("bytes=0-100", 11, .partial(start: 0, end: 10)),
            ("bytes=11-", 11, .unsatisfiable),
            ("bytes=-0", 11, .unsatisfiable),
            ("bytes=5-2", 11, .whole),
            ("bytes=a-b", 11, .whole),
            ("items=0-1", 11, .whole),
            ("bytes=0-1,2-3", 11, .whole),
            ("bytes=0-10", 0, .whole),
            // fuzz/RESULTS.md RANGE-1..3: digits only; positions past Int64 saturate; a malformed suffix is ignored.
            ("bytes=+5-", 10, .whole),
            ("bytes=0-+5", 10, .whole),
            ("bytes=99999999999999999999-", 10, .unsatisfiable),
            ("bytes=0-99999999999999999999", 10, .partial(start: 0, end: 9)),
            ("bytes=-99999999999999999999", 10, .partial(start: 0, end: 9)),
            ("bytes=-abc", 10, .whole),
            // RANGE-4: a saturated position followed by a non-digit is malformed, so ignored.
            ("bytes=9999999999999999999)-", 1, .whole),
            ("bytes=0-99999999999999999999x", 10, .whole),
            ("bytes=-99999999999999999999x", 10, .whole),
        ] as [(String?, Int64, ByteRange)])
    func resolve(header: String?, size: Int64, expected: ByteRange) {
        #expect(ByteRange.resolve(header, size: size) == expected)
    }
}

@Suite struct RouteTests {
    @Test func parsing() throws {
        let b = try BucketName("demo.appspot.com")
        #expect(try routed("/v0/b/demo.appspot.com/o") == .firebase(.bucket(b)))
        #expect(try routed("/v0/b/demo.appspot.com/o/") == .firebase(.bucket(b)))
        #expect(
            try routed("/v0/b/demo.appspot.com/o/a%2Fb%25c+d") == .firebase(.object(b, try ObjectName("a/b%c+d"))))
        #expect(try routed("/v0/b/demo.appspot.com/o/a/b%2Fc") == .firebase(.object(b, try ObjectName("a/b/c"))))
        #expect(try routed("/") == .kit(.probe))
        // Not the JSON API: the XML API's object `b/x/o` in bucket `v1`.
        #expect(try routed("/v1/b/x/o") == .gcs(.xmlObject(try BucketName("v1"), try ObjectName("b/x/o"))))
        #expect(
            try routed("/b%2Dx/dir%2Ffile%2Eparquet")
                == .gcs(.xmlObject(try BucketName("b-x"), try ObjectName("dir/file.parquet"))))
        #expect(try routed("/b-x/") == .gcs(.xmlBucket(try BucketName("b-x"))))
        #expect(try routed("/a%3Cb%3E/x") == .kit(.unknown))
        #expect(throws: StorageError.self) { try routed("/v0/b/demo.appspot.com/o/%E2%28") }
    }

    /// The v0 fast path decodes the object part whole; these are the cases where that could differ from
    /// decoding segment by segment.
    @Test func v0EdgeCases() throws {
        let b = try BucketName("demo.appspot.com")
        #expect(try routed("/v0/b/demo.appspot.com/o//") == .firebase(.object(b, try ObjectName("/"))))
        #expect(try routed("/v0/b/demo.appspot.com/o/a//b") == .firebase(.object(b, try ObjectName("a//b"))))
        #expect(try routed("/v0/b/demo.appspot.com/o/%C3%A9/x") == .firebase(.object(b, try ObjectName("é/x"))))
        // A multi-byte character cut by a literal '/' is invalid either way.
        #expect(throws: StorageError.self) { try routed("/v0/b/demo.appspot.com/o/%C3/%A9") }
        #expect(throws: StorageError.self) { try routed("/v0/b/demo.appspot.com/o/a%2") }
        #expect(try routed("/v0/b/demo.appspot.com") == .firebase(.unknown))
        #expect(try routed("/v0/b/demo.appspot.com/") == .firebase(.unknown))
        #expect(try routed("/v0/b/demo.appspot.com/x/a") == .firebase(.unknown))
        #expect(try routed("/v0/b/demo.appspot.com/ox") == .firebase(.unknown))
        // An invalid bucket is only an error once the path is otherwise a v0 route.
        #expect(try routed("/v0/b/BAD%20BUCKET/ox") == .firebase(.unknown))
        #expect(throws: StorageError.self) { try routed("/v0/b/BAD%20BUCKET/o/a") }
        #expect(throws: StorageError.self) { try routed("/v0/b//o/a") }
    }
}

/// fuzz/RESULTS.md NAME-2: the query splits at '?' and '=' bytes, keeping a combining mark that follows them.
@Suite struct QuerySplitTests {
    @Test func aCombiningMarkAfterTheSeparatorsIsKept() throws {
        let head = HTTPRequestHead(method: "GET", target: "/v0/b/x/o?\u{301}n=\u{301}abc")
        #expect(head.rawQuery == "\u{301}n=\u{301}abc")
        let items = try #require(head.queryItems)
        #expect(items.first?.name == "\u{301}n")
        #expect(items.first?.value == "\u{301}abc")
    }

    /// The one-pass parser answers as splitting on '&' then '=' and decoding each side does, for 20,000 queries
    /// made of separators, escapes good and bad, '+', and multi-byte characters.
    @Test func theOnePassParserAgreesWithSplittingAndDecoding() {
        let pieces = [
            "a", "b", "=", "&", "&&", "%", "%2", "%2F", "%zz", "+", "%2B", "é", "\u{301}", "%C3%A9", "%FF", "==",
        ]
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        for _ in 0..<20_000 {
            let query = (0..<next(9)).map { _ in pieces[next(pieces.count)] }.joined()
            let expected = Self.splitAndDecode(query)
            let got = HTTPRequestHead(method: "GET", rawPath: "/", rawQuery: query).queryItems
            #expect(got?.map { "\($0.name)=\($0.value)" } == expected?.map { "\($0.name)=\($0.value)" }, "\(query)")
        }
    }

    private static func splitAndDecode(_ query: String) -> [(name: String, value: String)]? {
        var items: [(name: String, value: String)] = []
        for pair in query.utf8.split(separator: UInt8(ascii: "&")) {
            let bytes = Array(pair)
            let eq = bytes.firstIndex(of: UInt8(ascii: "="))
            let name = String(decoding: bytes[..<(eq ?? bytes.count)], as: UTF8.self)
            let value = eq.map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) }
            guard let decodedName = PercentCoding.decodeQueryComponent(name),
                let decodedValue = value.map({ PercentCoding.decodeQueryComponent($0) }) ?? ""
            else { return nil }
            items.append((decodedName, decodedValue))
        }
        return items
    }
}

/// `matchGlob` as GCS documents it (`**/` matches zero or more segments).
@Suite struct GlobTests {
    @Test(
        arguments: [
            ("*.txt", "a.txt", true), ("*.txt", "a/b.txt", false), ("**.txt", "a/b.txt", true),
            ("**/*.txt", "a.txt", true), ("**/*.txt", "a/b/c.txt", true), ("**/x", "x", true), ("**/x", "ax", false),
            ("a/**/b", "a/b", true), ("a/**/b", "a/x/b", true), ("a/**/b", "a/x/y/b", true), ("a/**/b", "ab", false),
            ("a/**", "a/b/c", true), ("a?c", "abc", true), ("a?c", "a/c", false), ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false), ("[!a]x", "bx", true), ("[!a]x", "ax", false), ("{foo,bar}.txt", "bar.txt", true),
            ("{foo,bar}.txt", "baz.txt", false), ("\\*", "*", true), ("\\*", "a", false),
        ] as [(String, String, Bool)])
    func matches(pattern: String, name: String, expected: Bool) throws {
        #expect(try Glob(pattern).matches(name) == expected, "\(pattern) ~ \(name)")
    }

    @Test func hostilePatternsAreBoundedInSteps() throws {
        let long = String(repeating: "b", count: 1000)
        #expect(try !Glob(String(repeating: "*", count: 50) + "a").matches(long), "a run of stars is one star")
        #expect(try Glob("photos/**/*-{thumb,small}.jpg").matches("photos/2026/12/01/" + long + "-thumb.jpg"))
        // Past the step budget a pattern is refused instead of matched at any cost.
        #expect(throws: Glob.TooComplex.self) {
            _ = try Glob(String(repeating: "**/", count: 30) + "a").matches(String(repeating: "b/", count: 500))
        }
    }
}
