// libFuzzer harness for the epoll transport's chunked body decoder (ChunkedDecoder). The input is the bytes after a
// request head with `Transfer-Encoding: chunked`. Properties:
// - the decoder agrees with a reference decoder written here (recursive descent over the whole buffer, with the
//   limits the decoder documents): the same body bytes, the same end offset, refusal exactly when the reference
//   refuses, "need more" exactly when the input stops early;
// - split invariance: fed in random pieces, and one byte at a time, as a connection feeds it (each call sees only
//   the new bytes), the result is the same as fed whole;
// - every data range lies inside the buffer given, after what was already consumed; the index never goes backwards
//   or past the end; once ended it stays ended without consuming more.
// Each input runs with the transport's limits and with small ones, so the limits are exercised too.
@testable import SiloEpollHTTP

private enum Outcome: Equatable {
    /// The body, and the offset just past its final CRLF.
    case end([UInt8], at: Int)
    /// The input stopped before the body did; the body bytes so far.
    case needMore([UInt8])
    /// Refused; the body bytes delivered before the refusal are not compared (the reference reads lines whole).
    case invalid
}

/// Runs a decoder over `pieces` as a connection does: each piece is a fresh buffer of newly read bytes.
private func decode(_ pieces: [ArraySlice<UInt8>], maxLine: Int, maxTrailer: Int) -> Outcome {
    var decoder = ChunkedDecoder(maxLineBytes: maxLine, maxTrailerBytes: maxTrailer)
    var body: [UInt8] = []
    var offset = 0
    for piece in pieces {
        let step: Outcome? = piece.withUnsafeBytes { buffer in
            var index = 0
            while true {
                let before = index
                let step = decoder.next(buffer, &index)
                require(index >= before && index <= buffer.count, "index \(before) -> \(index) of \(buffer.count)")
                switch step {
                case .data(let range):
                    require(
                        range.lowerBound >= before && range.upperBound == index && !range.isEmpty,
                        "data range \(range) after index \(before), now \(index)")
                    body.append(contentsOf: buffer[range])
                case .needMore:
                    require(index == buffer.count, "needMore with \(buffer.count - index) bytes unconsumed")
                    return nil
                case .end:
                    require(decoder.isDone, "end but not done")
                    var again = index
                    require(decoder.next(buffer, &again) == .end && again == index, "a finished decoder moved on")
                    return .end(body, at: offset + index)
                case .invalid:
                    return .invalid
                }
            }
        }
        if let step { return step }
        offset += piece.count
    }
    return .needMore(body)
}

/// The reference: the grammar of RFC 9112 7.1 as the decoder accepts it (every line ended by CRLF — a bare LF or CR
/// is refused, as llhttp refuses it —, BWS or ';' before a chunk extension, extensions and trailer lines read and
/// dropped), read top-down from the whole buffer.
private struct Reference {
    let bytes: [UInt8]
    let maxLine: Int
    let maxTrailer: Int
    var i = 0
    var body: [UInt8] = []

    enum Stop: Error {
        case needMore
        case invalid
    }

    func peek() throws(Stop) -> UInt8 {
        guard i < bytes.count else { throw .needMore }
        return bytes[i]
    }

    static func hex(_ byte: UInt8) -> Int64? {
        switch byte {
        case 0x30...0x39: Int64(byte - 0x30)
        case 0x41...0x46: Int64(byte - 0x41 + 10)
        case 0x61...0x66: Int64(byte - 0x61 + 10)
        default: nil
        }
    }

    /// CRLF.
    mutating func lineEnd() throws(Stop) {
        guard try peek() == 0x0D else { throw .invalid }
        i += 1
        guard try peek() == 0x0A else { throw .invalid }
        i += 1
    }

    mutating func chunkSize() throws(Stop) -> Int64 {
        var size: Int64 = 0
        var digits = 0
        while let digit = Self.hex(try peek()) {
            digits += 1
            // The decoder's bound: 15 hex digits always fit an Int64.
            guard digits <= 15 else { throw .invalid }
            size = size * 16 + digit
            i += 1
        }
        guard digits > 0 else { throw .invalid }
        let next = try peek()
        if next == 0x3B || next == 0x20 || next == 0x09 {
            // Extension (and bad whitespace before it): anything but controls other than HTAB, up to the line end;
            // the line (digits, extension, and the CR if any) is bounded by maxLine.
            var length = digits + 1
            i += 1
            while true {
                let byte = try peek()
                if byte < 0x20 && byte != 0x09 && byte != 0x0D { throw .invalid }
                length += 1
                guard length <= maxLine else { throw .invalid }
                i += 1
                if byte == 0x0D {
                    guard try peek() == 0x0A else { throw .invalid }
                    break
                }
            }
            i += 1
        } else {
            try lineEnd()
        }
        return size
    }

    mutating func run() throws(Stop) -> Int {
        while true {
            let size = try chunkSize()
            if size == 0 { break }
            let available = bytes.count - i
            guard Int64(available) >= size else {
                body += bytes[i...]
                i = bytes.count
                throw .needMore
            }
            body += bytes[i..<(i + Int(size))]
            i += Int(size)
            try lineEnd()
        }
        // Trailer section: lines up to an empty one; all trailer lines together are bounded by maxTrailer (the first
        // byte of each line is counted as the next byte is read).
        var trailer = 0
        while true {
            let first = try peek()
            if first == 0x0D || first == 0x0A {
                try lineEnd()
                return i
            }
            trailer += 1
            i += 1
            while true {
                let byte = try peek()
                trailer += 1
                guard trailer <= maxTrailer else { throw .invalid }
                i += 1
                if byte == 0x0A { throw .invalid }
                if byte == 0x0D {
                    guard try peek() == 0x0A else { throw .invalid }
                    trailer += 1
                    guard trailer <= maxTrailer else { throw .invalid }
                    i += 1
                    break
                }
            }
        }
    }

    static func decode(_ bytes: [UInt8], maxLine: Int, maxTrailer: Int) -> Outcome {
        var reference = Reference(bytes: bytes, maxLine: maxLine, maxTrailer: maxTrailer)
        do {
            let end = try reference.run()
            return .end(reference.body, at: end)
        } catch .needMore {
            return .needMore(reference.body)
        } catch {
            return .invalid
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func chunkedFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var random = InputRandom(input)
    for (maxLine, maxTrailer) in [(4096, 64 * 1024), (24, 40)] {
        let whole = decode([input[...]], maxLine: maxLine, maxTrailer: maxTrailer)
        let expected = Reference.decode(input, maxLine: maxLine, maxTrailer: maxTrailer)
        require(
            whole == expected,
            "limits \(maxLine)/\(maxTrailer): decoder \(whole), reference \(expected) for \(hex(input))")
        let split = decode(
            pieces(input, at: random.cuts(in: input.count, limit: 8)), maxLine: maxLine, maxTrailer: maxTrailer)
        require(split == whole, "limits \(maxLine)/\(maxTrailer): split \(split), whole \(whole) for \(hex(input))")
        if input.count <= 1024 {
            let bytewise = decode(
                pieces(input, at: Array(1..<max(1, input.count))), maxLine: maxLine, maxTrailer: maxTrailer)
            require(bytewise == whole, "byte at a time \(bytewise), whole \(whole) for \(hex(input))")
        }
    }
    return 0
}
