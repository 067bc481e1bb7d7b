/// Decodes a `Transfer-Encoding: chunked` request body (RFC 9112 7.1) in place: it yields the ranges of data
/// inside the buffer it is given, so no byte is copied. Resumable at any byte boundary; pure, no I/O.
///
/// Chunk extensions and trailer fields are read and dropped (the head was already handed to the handler), each
/// bounded so a client cannot make the server scan without end.
///
/// Every line of the framing must end with CRLF: a bare LF (or CR) is refused, as llhttp refuses it. A proxy in front
/// that reads a bare LF differently (as data, or not as a line end) would otherwise see other chunk boundaries than
/// this server, and the bytes one of them takes for the next request could be smuggled past the other (RFC 9112
/// §7.1 writes CRLF; its §2.2 leniency is for lines of the head, which the framing is not).
struct ChunkedDecoder {
    enum Step: Equatable {
        /// Body bytes at these indices of the buffer.
        case data(Range<Int>)
        /// Everything given was consumed; more input is needed.
        case needMore
        /// The body ended; the index points after the final CRLF (what follows is the next request).
        case end
        case invalid(String)
    }

    private enum State {
        case size
        case sizeExtension
        case sizeLF
        case data(Int64)
        case dataCR
        case dataLF
        case trailerLineStart
        case trailerLine
        case trailerLineLF
        case trailerLF
        case done
    }

    private var state = State.size
    private var size: Int64 = 0
    private var sizeDigits = 0
    private var lineBytes = 0
    private var trailerBytes = 0
    /// Bounds one chunk-size line with its extensions, and all trailer lines together.
    let maxLineBytes: Int
    let maxTrailerBytes: Int

    init(maxLineBytes: Int = 4096, maxTrailerBytes: Int = 64 * 1024) {
        self.maxLineBytes = maxLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }

    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Consumes framing bytes from `index` on and returns the next data range, or why it stopped. `index` is
    /// advanced past everything consumed (including returned data).
    mutating func next(_ buffer: UnsafeRawBufferPointer, _ index: inout Int) -> Step {
        while index < buffer.count {
            let byte = buffer[index]
            switch state {
            case .size:
                if let digit = hexValue(byte) {
                    // 15 hex digits fit an Int64 without overflow.
                    guard sizeDigits < 15 else { return .invalid("chunk size too large") }
                    size = size * 16 + Int64(digit)
                    sizeDigits += 1
                    lineBytes += 1
                    index += 1
                } else if sizeDigits == 0 {
                    return .invalid("bad chunk size")
                } else if byte == 0x0D {
                    state = .sizeLF
                    index += 1
                } else if byte == 0x0A {
                    return .invalid("chunk size line ended by a bare LF")
                } else if byte == 0x3B || byte == 0x20 || byte == 0x09 {
                    state = .sizeExtension
                    lineBytes += 1
                    index += 1
                } else {
                    return .invalid("bad chunk size")
                }
            case .sizeExtension:
                if byte == 0x0D {
                    state = .sizeLF
                } else if byte == 0x0A {
                    return .invalid("chunk extension ended by a bare LF")
                } else if byte < 0x20 && byte != 0x09 {
                    return .invalid("control character in chunk extension")
                }
                lineBytes += 1
                guard lineBytes <= maxLineBytes else { return .invalid("chunk extension too long") }
                index += 1
            case .sizeLF:
                guard byte == 0x0A else { return .invalid("chunk size line not ended by CRLF") }
                index += 1
                sizeLineEnded()
            case .data(let remaining):
                let available = Int64(buffer.count - index)
                let take = Int(min(available, remaining))
                let range = index..<(index + take)
                index += take
                state = remaining == Int64(take) ? .dataCR : .data(remaining - Int64(take))
                return .data(range)
            case .dataCR:
                guard byte == 0x0D else { return .invalid("chunk data not followed by CRLF") }
                state = .dataLF
                index += 1
            case .dataLF:
                guard byte == 0x0A else { return .invalid("chunk data not followed by CRLF") }
                state = .size
                index += 1
            case .trailerLineStart:
                if byte == 0x0D {
                    state = .trailerLF
                } else if byte == 0x0A {
                    return .invalid("trailer section ended by a bare LF")
                } else {
                    state = .trailerLine
                    trailerBytes += 1
                }
                index += 1
            case .trailerLine:
                trailerBytes += 1
                guard trailerBytes <= maxTrailerBytes else { return .invalid("trailer too long") }
                if byte == 0x0A { return .invalid("trailer line ended by a bare LF") }
                if byte == 0x0D { state = .trailerLineLF }
                index += 1
            case .trailerLineLF:
                guard byte == 0x0A else { return .invalid("trailer line holds a bare CR") }
                trailerBytes += 1
                guard trailerBytes <= maxTrailerBytes else { return .invalid("trailer too long") }
                state = .trailerLineStart
                index += 1
            case .trailerLF:
                guard byte == 0x0A else { return .invalid("trailer section not ended by CRLF") }
                state = .done
                index += 1
                return .end
            case .done:
                return .end
            }
        }
        if case .done = state { return .end }
        return .needMore
    }

    private mutating func sizeLineEnded() {
        state = size == 0 ? .trailerLineStart : .data(size)
        size = 0
        sizeDigits = 0
        lineBytes = 0
    }

    private func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
