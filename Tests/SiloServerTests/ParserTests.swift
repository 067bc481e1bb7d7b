import SiloCore
import SiloTesting
import Testing

@testable import SiloServer

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

    @Test func boundaryHeader() {
        #expect(MultipartParser.boundary(fromContentType: "multipart/related; boundary=\"a=b\"") == "a=b")
        #expect(MultipartParser.boundary(fromContentType: "Multipart/Related;boundary=123") == "123")
        #expect(MultipartParser.boundary(fromContentType: "multipart/form-data; boundary=1") == nil)
        #expect(MultipartParser.boundary(fromContentType: "multipart/related") == nil)
        #expect(MultipartParser.boundary(fromContentType: nil) == nil)
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
        ] as [(String?, Int64, ByteRange)])
    func resolve(header: String?, size: Int64, expected: ByteRange) {
        #expect(ByteRange.resolve(header, size: size) == expected)
    }
}

@Suite struct RouteTests {
    @Test func parsing() throws {
        let b = try BucketName("demo.appspot.com")
        #expect(try Route.parse("/v0/b/demo.appspot.com/o") == .firebaseBucket(b))
        #expect(try Route.parse("/v0/b/demo.appspot.com/o/") == .firebaseBucket(b))
        #expect(
            try Route.parse("/v0/b/demo.appspot.com/o/a%2Fb%25c+d") == .firebaseObject(b, try ObjectName("a/b%c+d")))
        #expect(try Route.parse("/v0/b/demo.appspot.com/o/a/b%2Fc") == .firebaseObject(b, try ObjectName("a/b/c")))
        #expect(try Route.parse("/") == .probe)
        #expect(try Route.parse("/v1/b/x/o") == .unknown)
        #expect(throws: StorageError.self) { try Route.parse("/v0/b/demo.appspot.com/o/%E2%28") }
    }

    /// The v0 fast path decodes the object part whole; these are the cases where that could differ from
    /// decoding segment by segment.
    @Test func v0EdgeCases() throws {
        let b = try BucketName("demo.appspot.com")
        #expect(try Route.parse("/v0/b/demo.appspot.com/o//") == .firebaseObject(b, try ObjectName("/")))
        #expect(try Route.parse("/v0/b/demo.appspot.com/o/a//b") == .firebaseObject(b, try ObjectName("a//b")))
        #expect(try Route.parse("/v0/b/demo.appspot.com/o/%C3%A9/x") == .firebaseObject(b, try ObjectName("é/x")))
        // A multi-byte character cut by a literal '/' is invalid either way.
        #expect(throws: StorageError.self) { try Route.parse("/v0/b/demo.appspot.com/o/%C3/%A9") }
        #expect(throws: StorageError.self) { try Route.parse("/v0/b/demo.appspot.com/o/a%2") }
        #expect(try Route.parse("/v0/b/demo.appspot.com") == .unknown)
        #expect(try Route.parse("/v0/b/demo.appspot.com/") == .unknown)
        #expect(try Route.parse("/v0/b/demo.appspot.com/x/a") == .unknown)
        #expect(try Route.parse("/v0/b/demo.appspot.com/ox") == .unknown)
        // An invalid bucket is only an error once the path is otherwise a v0 route.
        #expect(try Route.parse("/v0/b/BAD%20BUCKET/ox") == .unknown)
        #expect(throws: StorageError.self) { try Route.parse("/v0/b/BAD%20BUCKET/o/a") }
        #expect(throws: StorageError.self) { try Route.parse("/v0/b//o/a") }
    }
}
