// libFuzzer harness for the multipart/related upload parser (MultipartParser). Input: a first line holding the
// boundary (as it would appear in the Content-Type parameter, possibly quoted) and the body after it. Properties:
// - split invariance: the body fed whole, in random pieces across reads, and (for small bodies) one byte at a
//   time gives the same metadata, media content type, media bytes, completion and error;
// - events come in order (metadata once, then mediaStart once, then media bytes), metadata within its bound;
// - round trip: the input cut into a metadata part and a media part and framed the way the JS SDK frames them
//   (and once with quoted boundary, extra part headers, transport padding and no final CRLF) parses back to
//   exactly those parts, unless a part happens to contain the delimiter (after CRLF or a bare LF);
// - `boundary(fromContentType:)` returns a non-empty boundary of at most 200 bytes, or nil.
import SiloCore

@testable import SiloServerKit

private struct Parsed: Equatable {
    var metadata: [UInt8]?
    var contentType: String??
    var media: [UInt8] = []
    var complete = false
    var error: String?

    static func == (a: Parsed, b: Parsed) -> Bool {
        a.metadata == b.metadata && a.media == b.media && a.complete == b.complete && a.error == b.error
            && a.contentType.map { $0.map { Array($0.utf8) } } == b.contentType.map { $0.map { Array($0.utf8) } }
    }
}

private let maxMetadata = 512

private func parse(boundary: String, _ chunks: [ArraySlice<UInt8>]) -> Parsed {
    var parser = MultipartParser(boundary: boundary, maxMetadataBytes: maxMetadata)
    var result = Parsed()
    do {
        for chunk in chunks {
            try chunk.withUnsafeBytes { buffer in
                try parser.feed(buffer) { event in
                    switch event {
                    case .metadata(let bytes):
                        require(result.metadata == nil, "metadata twice")
                        require(result.contentType == nil, "metadata after mediaStart")
                        require(bytes.count <= maxMetadata, "metadata of \(bytes.count) bytes")
                        result.metadata = bytes
                    case .mediaStart(let type):
                        require(result.metadata != nil, "mediaStart before metadata")
                        require(result.contentType == nil, "mediaStart twice")
                        result.contentType = .some(type)
                    case .mediaBytes(let bytes):
                        require(result.contentType != nil, "media bytes before mediaStart")
                        result.media.append(contentsOf: bytes)
                    case .field, .fileStart:
                        fail("a form event from a multipart/related parser")
                    }
                }
            }
        }
        result.complete = parser.isComplete
        try parser.finish()
    } catch {
        result.error = "\(error)"
    }
    return result
}

private func describe(_ p: Parsed) -> String {
    "metadata \(p.metadata.map { hex($0, limit: 64) } ?? "-") type \(String(describing: p.contentType)) "
        + "media \(p.media.count) bytes \(hex(p.media, limit: 32)) complete \(p.complete) error \(p.error ?? "-")"
}

@_cdecl("LLVMFuzzerTestOneInput")
public func multipartFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var random = InputRandom(input)
    let newline = input.firstIndex(of: 0x0A) ?? input.count
    let firstLine = String(decoding: input[..<newline], as: UTF8.self)
    let body = newline < input.count ? Array(input[(newline + 1)...]) : []

    if let boundary = MultipartParser.boundary(fromContentType: firstLine) {
        require(!boundary.isEmpty && boundary.utf8.count <= 200, "boundary \(boundary.debugDescription)")
    }
    let header = "multipart/related; boundary=\(firstLine)"
    let boundary = MultipartParser.boundary(fromContentType: header) ?? "b0undary"

    // The body as sent: however it is cut, the same answer.
    let whole = parse(boundary: boundary, [body[...]])
    let split = parse(boundary: boundary, pieces(body, at: random.cuts(in: body.count, limit: 12)))
    require(split == whole, "split: \(describe(split))\nwhole: \(describe(whole))\ninput \(hex(input))")
    if body.count <= 2048 {
        let bytewise = parse(boundary: boundary, pieces(body, at: Array(1..<max(1, body.count))))
        require(bytewise == whole, "bytewise: \(describe(bytewise))\nwhole: \(describe(whole))\ninput \(hex(input))")
    }

    // Round trip: the input as the two parts of a well-formed body.
    let cut = random.below(min(body.count, maxMetadata) + 1)
    let metadata = Array(body[..<cut])
    let media = Array(body[cut...])
    // A bare LF before the dashes frames a part too (gcsfs frames with LF), so a part holding `\n--BOUNDARY` is a
    // different body.
    let delimiter = Array("\n--\(boundary)".utf8)
    let plainBoundary = boundary.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    let type = "image/png"
    let sdk =
        Array("--\(boundary)\r\nContent-Type: application/json; charset=utf-8\r\n\r\n".utf8) + metadata
        + Array("\r\n--\(boundary)\r\nContent-Type: \(type)\r\n\r\n".utf8) + media + Array("\r\n--\(boundary)--".utf8)
    let lenient =
        Array("preamble\r\n--\(boundary) \t\r\ncontent-TYPE: application/json\r\nX-A: b\r\n\r\n".utf8) + metadata
        + Array("\r\n--\(boundary)\t\r\nContent-Transfer-Encoding: binary\r\ncontent-type:  \(type) \r\n\r\n".utf8)
        + media + Array("\r\n--\(boundary)--\r\nepilogue".utf8)
    for framed in [sdk, lenient] where plainBoundary {
        // Only the three delimiters of the framing (a part that happens to contain one is a different body).
        let searched = [0x0D, 0x0A] + framed
        var occurrences = 0
        var from = 0
        while let at = find(delimiter, in: searched, from: from) {
            occurrences += 1
            from = at + 1
        }
        guard occurrences == 3 else { continue }
        let parsed = parse(boundary: boundary, pieces(framed, at: random.cuts(in: framed.count, limit: 6)))
        let expected = Parsed(metadata: metadata, contentType: .some(type), media: media, complete: true, error: nil)
        require(
            parsed == expected,
            "framed \(hex(framed, limit: 512)) parsed as \(describe(parsed)), expected \(describe(expected))")
    }
    return 0
}
