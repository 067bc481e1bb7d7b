/// Scans the rules source on demand. The parser drives it because two constructs need a different mode than
/// ordinary tokens: match paths after `match`, and path literals where an operand is expected. Both are
/// scanned by the parser directly from `bytes` starting at `position`.
struct Lexer {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func peekByte(_ ahead: Int = 0) -> UInt8? {
        position + ahead < bytes.count ? bytes[position + ahead] : nil
    }

    /// Skips whitespace and both comment forms.
    mutating func skipTrivia() throws(SyntaxError) {
        while position < bytes.count {
            let b = bytes[position]
            if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
                position += 1
            } else if b == 0x2F, peekByte(1) == 0x2F {
                while position < bytes.count, bytes[position] != 0x0A { position += 1 }
            } else if b == 0x2F, peekByte(1) == 0x2A {
                let start = position
                position += 2
                while true {
                    guard position + 1 < bytes.count else {
                        throw SyntaxError(offset: start, message: "unterminated block comment")
                    }
                    if bytes[position] == 0x2A, bytes[position + 1] == 0x2F {
                        position += 2
                        break
                    }
                    position += 1
                }
            } else {
                return
            }
        }
    }

    static func isIdentStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
    }
    static func isIdentPart(_ b: UInt8) -> Bool { isIdentStart(b) || isDigit(b) }
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    mutating func next() throws(SyntaxError) -> Token {
        try skipTrivia()
        let start = position
        guard position < bytes.count else { return Token(kind: .end, start: start, end: start) }
        let b = bytes[position]
        if Lexer.isIdentStart(b) {
            while position < bytes.count, Lexer.isIdentPart(bytes[position]) { position += 1 }
            let word = String(decoding: bytes[start..<position], as: UTF8.self)
            if let q = peekByte(), q == 0x27 || q == 0x22, let prefix = StringPrefix(word) {
                let kind = try scanQuoted(prefix: prefix)
                return Token(kind: kind, start: start, end: position)
            }
            if let keyword = Keyword(rawValue: word) {
                return Token(kind: .keyword(keyword), start: start, end: position)
            }
            return Token(kind: .identifier(word), start: start, end: position)
        }
        if Lexer.isDigit(b) || (b == 0x2E && peekByte(1).map(Lexer.isDigit) == true) {
            return Token(kind: try scanNumber(), start: start, end: position)
        }
        if b == 0x27 || b == 0x22 {
            let kind = try scanQuoted(prefix: StringPrefix(raw: false, bytes: false))
            return Token(kind: kind, start: start, end: position)
        }
        let two: Punct? =
            position + 1 < bytes.count
            ? Punct(rawValue: String(decoding: bytes[position...position + 1], as: UTF8.self)) : nil
        if let two {
            position += 2
            return Token(kind: .punct(two), start: start, end: position)
        }
        if let one = Punct(rawValue: String(UnicodeScalar(b))) {
            position += 1
            return Token(kind: .punct(one), start: start, end: position)
        }
        throw SyntaxError(offset: start, message: "unexpected character \(describeByte(at: start))")
    }

    func describeByte(at offset: Int) -> String {
        let b = bytes[offset]
        if b >= 0x21 && b < 0x7F { return "'\(String(UnicodeScalar(b)))'" }
        return "0x" + String(b, radix: 16, uppercase: true)
    }

    private mutating func scanNumber() throws(SyntaxError) -> TokenKind {
        let start = position
        if bytes[position] == 0x30, let x = peekByte(1), x == 0x78 || x == 0x58 {
            position += 2
            let digitsStart = position
            while let c = peekByte(), hexValue(c) != nil { position += 1 }
            let text = String(decoding: bytes[digitsStart..<position], as: UTF8.self)
            guard !text.isEmpty, let v = Int64(text, radix: 16) else {
                throw SyntaxError(offset: start, message: "invalid or out-of-range hexadecimal literal")
            }
            return .int(v)
        }
        var isFloat = false
        while let c = peekByte(), Lexer.isDigit(c) { position += 1 }
        if peekByte() == 0x2E {
            // `12.5`, `12.` and `.5` are floats; `1.size()` would be a method call on an int, so a dot followed by
            // a letter is left for the parser.
            let after = peekByte(1)
            if after == nil || !Lexer.isIdentStart(after!) {
                isFloat = true
                position += 1
                while let c = peekByte(), Lexer.isDigit(c) { position += 1 }
            }
        }
        if let e = peekByte(), e == 0x65 || e == 0x45 {
            var p = position + 1
            if p < bytes.count, bytes[p] == 0x2B || bytes[p] == 0x2D { p += 1 }
            if p < bytes.count, Lexer.isDigit(bytes[p]) {
                isFloat = true
                position = p
                while let c = peekByte(), Lexer.isDigit(c) { position += 1 }
            }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isFloat {
            guard let d = Double(text.hasPrefix(".") ? "0" + text : (text.hasSuffix(".") ? text + "0" : text)) else {
                throw SyntaxError(offset: start, message: "invalid float literal")
            }
            return .float(d)
        }
        guard let v = Int64(text) else {
            throw SyntaxError(offset: start, message: "integer literal \(text) does not fit in 64 bits")
        }
        return .int(v)
    }

    struct StringPrefix {
        var raw: Bool
        var bytes: Bool
        init(raw: Bool, bytes: Bool) {
            self.raw = raw
            self.bytes = bytes
        }
        init?(_ word: String) {
            switch word.lowercased() {
            case "r": self.init(raw: true, bytes: false)
            case "b": self.init(raw: false, bytes: true)
            case "rb", "br": self.init(raw: true, bytes: true)
            default: return nil
            }
        }
    }

    /// Scans a quoted literal at `position` (the quote). Escapes as in the rules language; an unknown escape is an
    /// error.
    private mutating func scanQuoted(prefix: StringPrefix) throws(SyntaxError) -> TokenKind {
        let quote = bytes[position]
        let start = position
        position += 1
        var out: [UInt8] = []
        while true {
            guard position < bytes.count, bytes[position] != 0x0A, bytes[position] != 0x0D else {
                throw SyntaxError(offset: start, message: "unterminated string literal")
            }
            let c = bytes[position]
            if c == quote {
                position += 1
                break
            }
            if c != 0x5C || prefix.raw {
                out.append(c)
                position += 1
                continue
            }
            let escapeAt = position
            position += 1
            guard position < bytes.count else {
                throw SyntaxError(offset: start, message: "unterminated string literal")
            }
            let e = bytes[position]
            position += 1
            switch e {
            case 0x5C, 0x27, 0x22, 0x60, 0x3F: out.append(e)
            case 0x61: out.append(0x07)
            case 0x62: out.append(0x08)
            case 0x66: out.append(0x0C)
            case 0x6E: out.append(0x0A)
            case 0x72: out.append(0x0D)
            case 0x74: out.append(0x09)
            case 0x76: out.append(0x0B)
            case 0x78, 0x58:
                let v = try fixedDigits(2, radix: 16, at: escapeAt)
                appendCode(v, raw: prefix.bytes, to: &out)
            case 0x75:
                let v = try fixedDigits(4, radix: 16, at: escapeAt)
                try appendScalar(v, at: escapeAt, to: &out)
            case 0x55:
                let v = try fixedDigits(8, radix: 16, at: escapeAt)
                try appendScalar(v, at: escapeAt, to: &out)
            case 0x30...0x37:
                position -= 1
                let v = try fixedDigits(3, radix: 8, at: escapeAt)
                guard v <= 0xFF else { throw SyntaxError(offset: escapeAt, message: "octal escape out of range") }
                appendCode(v, raw: prefix.bytes, to: &out)
            default:
                throw SyntaxError(
                    offset: escapeAt, message: "unknown escape sequence \\\(describeByte(at: escapeAt + 1))")
            }
        }
        if prefix.bytes { return .bytes(out) }
        guard let s = String(validating: out, as: UTF8.self) else {
            throw SyntaxError(offset: start, message: "string literal is not valid UTF-8")
        }
        return .string(s)
    }

    private func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x30...0x39: UInt32(c - 0x30)
        case 0x41...0x46: UInt32(c - 0x41 + 10)
        case 0x61...0x66: UInt32(c - 0x61 + 10)
        default: nil
        }
    }

    private mutating func fixedDigits(_ count: Int, radix: UInt32, at escapeAt: Int) throws(SyntaxError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<count {
            guard position < bytes.count, let d = hexValue(bytes[position]), d < radix else {
                throw SyntaxError(offset: escapeAt, message: "escape needs exactly \(count) digits in base \(radix)")
            }
            v = v * radix + d
            position += 1
        }
        return v
    }

    /// In bytes literals `\xHH` and `\ooo` are raw bytes; in strings they are code points.
    private func appendCode(_ v: UInt32, raw: Bool, to out: inout [UInt8]) {
        if raw {
            out.append(UInt8(v))
        } else {
            out.append(contentsOf: Array(String(Character(UnicodeScalar(UInt8(v)))).utf8))
        }
    }

    private func appendScalar(_ v: UInt32, at offset: Int, to out: inout [UInt8]) throws(SyntaxError) {
        guard let scalar = UnicodeScalar(v) else {
            throw SyntaxError(offset: offset, message: "escape is not a Unicode scalar value")
        }
        out.append(contentsOf: Array(String(Character(scalar)).utf8))
    }
}
