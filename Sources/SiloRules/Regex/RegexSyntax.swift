/// Parser for the RE2 subset the rules accept: literals, `.`, classes (`[a-z]`, `[^…]`, `\d \w \s` and their
/// negations), anchors (`^ $ \A \z \b \B`), groups (`(…)`, `(?:…)`, `(?P<n>…)`, `(?<n>…)`), flags `i s m U`,
/// alternation, and `* + ? {n} {n,} {n,m}` with lazy variants. Backreferences and look-around are rejected
/// because they cannot run in linear time, which is the reason RE2 (and so Firebase) leaves them out.
struct RegexError: Error, Sendable {
    var message: String
}

struct CharClass: Sendable {
    /// Sorted, non-overlapping, inclusive.
    var ranges: [ClosedRange<UInt32>]

    func contains(_ c: UInt32) -> Bool {
        var lo = 0
        var hi = ranges.count - 1
        while lo <= hi {
            let mid = (lo + hi) / 2
            if c < ranges[mid].lowerBound {
                hi = mid - 1
            } else if c > ranges[mid].upperBound {
                lo = mid + 1
            } else {
                return true
            }
        }
        return false
    }

    static func normalized(_ input: [ClosedRange<UInt32>]) -> CharClass {
        let sorted = input.sorted { $0.lowerBound < $1.lowerBound }
        var out: [ClosedRange<UInt32>] = []
        for r in sorted {
            if let last = out.last, r.lowerBound <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return CharClass(ranges: out)
    }

    func inverted() -> CharClass {
        var out: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for r in ranges {
            if r.lowerBound > next { out.append(next...(r.lowerBound - 1)) }
            next = r.upperBound + 1
        }
        if next <= 0x10FFFF { out.append(next...0x10FFFF) }
        return CharClass(ranges: out)
    }
}

indirect enum RegexNode: Sendable {
    case empty
    case scalar(UInt32)
    case any(dotAll: Bool)
    case charClass(CharClass)
    case concat([RegexNode])
    case alternate([RegexNode])
    case repeated(RegexNode, min: Int, max: Int?, greedy: Bool)
    case assertion(RegexAssertion)
}

enum RegexAssertion: Sendable {
    case textStart, textEnd, lineStart, lineEnd, wordBoundary, notWordBoundary
}

struct RegexParser {
    private let s: [UInt32]
    private var i = 0
    private var depth = 0
    private var caseInsensitive = false
    private var dotAll = false
    private var multiLine = false
    private var ungreedy = false

    init(_ pattern: String) { s = pattern.unicodeScalars.map(\.value) }

    private func fail(_ m: String) -> RegexError { RegexError(message: m) }

    mutating func parse() throws(RegexError) -> RegexNode {
        let node = try parseAlternation()
        if i < s.count { throw fail("unmatched ')'") }
        return node
    }

    private func peek() -> UInt32? { i < s.count ? s[i] : nil }

    private mutating func parseAlternation() throws(RegexError) -> RegexNode {
        depth += 1
        defer { depth -= 1 }
        if depth > 100 { throw fail("regex nested too deeply") }
        var branches = [try parseConcat()]
        while peek() == 0x7C {
            i += 1
            branches.append(try parseConcat())
        }
        return branches.count == 1 ? branches[0] : .alternate(branches)
    }

    private mutating func parseConcat() throws(RegexError) -> RegexNode {
        var items: [RegexNode] = []
        let savedFlags = (caseInsensitive, dotAll, multiLine, ungreedy)
        defer { (caseInsensitive, dotAll, multiLine, ungreedy) = savedFlags }
        while let c = peek(), c != 0x7C, c != 0x29 {
            guard var atom = try parseAtom() else { continue }
            var quantified = false
            while let q = peek(), q == 0x2A || q == 0x2B || q == 0x3F || q == 0x7B {
                var min = 0
                var max: Int?
                let start = i
                if q == 0x7B {
                    guard let bounds = parseBraces() else {
                        // RE2 treats a `{` that does not start a valid repetition as a literal.
                        i = start
                        break
                    }
                    (min, max) = bounds
                } else {
                    i += 1
                    switch q {
                    case 0x2A: (min, max) = (0, nil)
                    case 0x2B: (min, max) = (1, nil)
                    default: (min, max) = (0, 1)
                    }
                }
                if quantified { throw fail("bad repetition operator") }
                if case .assertion = atom { throw fail("missing argument to repetition operator") }
                if case .empty = atom { throw fail("missing argument to repetition operator") }
                quantified = true
                var greedy = !ungreedy
                if peek() == 0x3F {
                    i += 1
                    greedy.toggle()
                }
                if min > Limits.maxRegexRepeat || (max ?? 0) > Limits.maxRegexRepeat || (max.map { $0 < min } ?? false)
                {
                    throw fail("bad repetition bound")
                }
                atom = .repeated(atom, min: min, max: max, greedy: greedy)
            }
            items.append(atom)
        }
        if items.isEmpty { return .empty }
        return items.count == 1 ? items[0] : .concat(items)
    }

    /// `{n}`, `{n,}` or `{n,m}` at `i`; nil (with `i` unspecified) if it is not one.
    private mutating func parseBraces() -> (Int, Int?)? {
        i += 1
        guard let min = parseNumber() else { return nil }
        if peek() == 0x7D {
            i += 1
            return (min, min)
        }
        guard peek() == 0x2C else { return nil }
        i += 1
        if peek() == 0x7D {
            i += 1
            return (min, nil)
        }
        guard let max = parseNumber(), peek() == 0x7D else { return nil }
        i += 1
        return (min, max)
    }

    private mutating func parseNumber() -> Int? {
        var v = 0
        let start = i
        while let c = peek(), c >= 0x30, c <= 0x39 {
            v = min(v * 10 + Int(c - 0x30), 100_000)
            i += 1
        }
        return i > start ? v : nil
    }

    /// Returns nil for a flag group like `(?i)` that produced no node.
    private mutating func parseAtom() throws(RegexError) -> RegexNode? {
        let c = s[i]
        i += 1
        switch c {
        case 0x28: return try parseGroup()
        case 0x5B: return .charClass(try parseClass())
        case 0x2E: return .any(dotAll: dotAll)
        case 0x5E: return .assertion(multiLine ? .lineStart : .textStart)
        case 0x24: return .assertion(multiLine ? .lineEnd : .textEnd)
        case 0x5C: return try parseEscape()
        case 0x2A, 0x2B, 0x3F: throw fail("missing argument to repetition operator")
        default: return literal(c)
        }
    }

    private func literal(_ c: UInt32) -> RegexNode {
        guard caseInsensitive else { return .scalar(c) }
        let variants = RegexParser.caseVariants(c)
        return variants.count == 1 ? .scalar(c) : .charClass(CharClass.normalized(variants.map { $0...$0 }))
    }

    static func caseVariants(_ c: UInt32) -> [UInt32] {
        guard let scalar = Unicode.Scalar(c) else { return [c] }
        var out = [c]
        let p = scalar.properties
        for mapping in [p.lowercaseMapping, p.uppercaseMapping, p.titlecaseMapping] {
            let scalars = mapping.unicodeScalars
            if scalars.count == 1, let v = scalars.first?.value, !out.contains(v) { out.append(v) }
        }
        return out
    }

    private mutating func parseGroup() throws(RegexError) -> RegexNode? {
        if peek() == 0x3F {
            i += 1
            guard let c = peek() else { throw fail("missing ')'") }
            if c == 0x50 || c == 0x3C {
                // Named group: (?P<name>…) or (?<name>…).
                if c == 0x50 { i += 1 }
                guard peek() == 0x3C else { throw fail("invalid named group") }
                i += 1
                let start = i
                while let d = peek(), d != 0x3E {
                    guard (d >= 0x30 && d <= 0x39) || (d >= 0x41 && d <= 0x5A) || (d >= 0x61 && d <= 0x7A) || d == 0x5F
                    else { throw fail("invalid group name") }
                    i += 1
                }
                guard peek() == 0x3E, i > start else { throw fail("invalid named group") }
                i += 1
                return try groupBody()
            }
            // Flags: (?flags) or (?flags:…); look-around and the rest are not RE2.
            var negate = false
            var flags = (caseInsensitive, dotAll, multiLine, ungreedy)
            while let d = peek() {
                i += 1
                switch d {
                case 0x69: flags.0 = !negate
                case 0x73: flags.1 = !negate
                case 0x6D: flags.2 = !negate
                case 0x55: flags.3 = !negate
                case 0x2D:
                    if negate { throw fail("invalid flags") }
                    negate = true
                case 0x29:
                    // Applies to the rest of the enclosing group; parseConcat restores on exit.
                    (caseInsensitive, dotAll, multiLine, ungreedy) = flags
                    return nil
                case 0x3A:
                    let saved = (caseInsensitive, dotAll, multiLine, ungreedy)
                    (caseInsensitive, dotAll, multiLine, ungreedy) = flags
                    defer { (caseInsensitive, dotAll, multiLine, ungreedy) = saved }
                    return try groupBody()
                default: throw fail("unsupported group syntax (look-around and backreferences are not RE2)")
                }
            }
            throw fail("missing ')'")
        }
        return try groupBody()
    }

    private mutating func groupBody() throws(RegexError) -> RegexNode {
        let node = try parseAlternation()
        guard peek() == 0x29 else { throw fail("missing ')'") }
        i += 1
        return node
    }

    static let digit = CharClass(ranges: [0x30...0x39])
    static let word = CharClass.normalized([0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F...0x5F])
    static let space = CharClass.normalized([0x09...0x0A, 0x0C...0x0D, 0x20...0x20])

    /// `\d \w \s` and negations, or nil if `c` is not a class escape.
    private static func classEscape(_ c: UInt32) -> CharClass? {
        switch c {
        case 0x64: digit
        case 0x44: digit.inverted()
        case 0x77: word
        case 0x57: word.inverted()
        case 0x73: space
        case 0x53: space.inverted()
        default: nil
        }
    }

    /// A single escaped scalar (`\n`, `\x41`, `\.` …) or an error for unsupported escapes.
    private mutating func escapedScalar(_ c: UInt32) throws(RegexError) -> UInt32 {
        switch c {
        case 0x6E: return 0x0A
        case 0x74: return 0x09
        case 0x72: return 0x0D
        case 0x66: return 0x0C
        case 0x76: return 0x0B
        case 0x61: return 0x07
        case 0x78:
            var v: UInt32 = 0
            if peek() == 0x7B {
                i += 1
                var n = 0
                while let d = peek(), let h = RegexParser.hex(d) {
                    v = v * 16 + h
                    n += 1
                    i += 1
                    if v > 0x10FFFF { throw fail("invalid escape") }
                }
                guard n > 0, peek() == 0x7D else { throw fail("invalid \\x{…} escape") }
                i += 1
                return v
            }
            for _ in 0..<2 {
                guard let d = peek(), let h = RegexParser.hex(d) else { throw fail("invalid \\x escape") }
                v = v * 16 + h
                i += 1
            }
            return v
        default:
            // Any punctuation may be escaped to stand for itself; letters and digits are reserved.
            if c < 0x80, !((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)) {
                return c
            }
            throw fail("unsupported escape \\\(String(UnicodeScalar(c).map(Character.init) ?? "?"))")
        }
    }

    private static func hex(_ d: UInt32) -> UInt32? {
        switch d {
        case 0x30...0x39: d - 0x30
        case 0x41...0x46: d - 0x41 + 10
        case 0x61...0x66: d - 0x61 + 10
        default: nil
        }
    }

    private mutating func parseEscape() throws(RegexError) -> RegexNode {
        guard let c = peek() else { throw fail("trailing backslash") }
        i += 1
        if let cls = RegexParser.classEscape(c) { return .charClass(cls) }
        switch c {
        case 0x41: return .assertion(.textStart)
        case 0x7A: return .assertion(.textEnd)
        case 0x62: return .assertion(.wordBoundary)
        case 0x42: return .assertion(.notWordBoundary)
        default: return literal(try escapedScalar(c))
        }
    }

    private mutating func parseClass() throws(RegexError) -> CharClass {
        var negated = false
        if peek() == 0x5E {
            negated = true
            i += 1
        }
        var ranges: [ClosedRange<UInt32>] = []
        var first = true
        while true {
            guard let c = peek() else { throw fail("missing ']'") }
            if c == 0x5D && !first { break }
            first = false
            i += 1
            var lo = c
            if c == 0x5B, peek() == 0x3A {
                throw fail("POSIX character classes are not supported")
            }
            if c == 0x5C {
                guard let e = peek() else { throw fail("trailing backslash") }
                i += 1
                if let cls = RegexParser.classEscape(e) {
                    ranges.append(contentsOf: cls.ranges)
                    continue
                }
                lo = try escapedScalar(e)
            }
            var hi = lo
            if peek() == 0x2D, i + 1 < s.count, s[i + 1] != 0x5D {
                i += 1
                var h = s[i]
                i += 1
                if h == 0x5C {
                    guard let e = peek() else { throw fail("trailing backslash") }
                    i += 1
                    h = try escapedScalar(e)
                }
                guard h >= lo else { throw fail("invalid character class range") }
                hi = h
            }
            ranges.append(lo...hi)
        }
        i += 1
        if caseInsensitive {
            for r in ranges where r.count <= 512 {
                for c in r { ranges.append(contentsOf: RegexParser.caseVariants(c).map { $0...$0 }) }
            }
        }
        let cls = CharClass.normalized(ranges)
        return negated ? cls.inverted() : cls
    }
}
