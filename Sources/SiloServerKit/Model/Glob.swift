/// `matchGlob` of the GCS list API: `*` matches within one `/`-separated segment, `**` across segments (`**/` zero
/// or more whole segments, so `**/x` matches `x` too, as in GCS), `?` one character other than `/`,
/// `[abc]`/`[a-z]`/`[!a]` a class, `{a,b}` alternatives. Matching works on Unicode
/// scalars and is iterative with memoisation, so hostile patterns cannot blow up.
package struct Glob {
    private indirect enum Token: Equatable {
        case literal(Unicode.Scalar)
        case any  // ?
        case star  // *
        case globstar  // **
        case segments  // **/ : zero or more segments, each with its slash
        case set([ClosedRange<Unicode.Scalar>], negated: Bool)
        case alternatives([[Token]])
    }

    private let tokens: [Token]

    package init(_ pattern: String) throws {
        var scalars = Array(pattern.unicodeScalars)[...]
        tokens = try Glob.parse(&scalars, inAlternative: false)
        guard scalars.isEmpty else { throw GlobError(pattern: pattern) }
    }

    struct GlobError: Error { let pattern: String }

    private static func parse(_ s: inout ArraySlice<Unicode.Scalar>, inAlternative: Bool) throws -> [Token] {
        var out: [Token] = []
        while let c = s.first {
            if inAlternative && (c == "," || c == "}") { return out }
            s.removeFirst()
            switch c {
            case "*":
                // Runs of stars match what their widest member does: one token, not one loop each.
                var globstar = false
                while s.first == "*" {
                    s.removeFirst()
                    globstar = true
                }
                if globstar && s.first == "/" && out.last != .globstar {
                    s.removeFirst()
                    out.append(.segments)
                } else if globstar {
                    if out.last == .star { out.removeLast() }
                    if out.last != .globstar { out.append(.globstar) }
                } else if out.last != .star && out.last != .globstar {
                    out.append(.star)
                }
            case "?": out.append(.any)
            case "\\":
                guard let next = s.first else { throw GlobError(pattern: "") }
                s.removeFirst()
                out.append(.literal(next))
            case "[":
                var negated = false
                if s.first == "!" || s.first == "^" {
                    negated = true
                    s.removeFirst()
                }
                var ranges: [ClosedRange<Unicode.Scalar>] = []
                var first = true
                while let d = s.first, d != "]" || first {
                    first = false
                    s.removeFirst()
                    if s.first == "-", s.count >= 2, s[s.index(after: s.startIndex)] != "]" {
                        s.removeFirst()
                        let hi = s.removeFirst()
                        guard d <= hi else { throw GlobError(pattern: "") }
                        ranges.append(d...hi)
                    } else {
                        ranges.append(d...d)
                    }
                }
                guard s.first == "]" else { throw GlobError(pattern: "") }
                s.removeFirst()
                out.append(.set(ranges, negated: negated))
            case "{":
                var options: [[Token]] = []
                while true {
                    options.append(try parse(&s, inAlternative: true))
                    guard let d = s.first else { throw GlobError(pattern: "") }
                    s.removeFirst()
                    if d == "}" { break }
                }
                out.append(.alternatives(options))
            default: out.append(.literal(c))
            }
        }
        return out
    }

    /// Steps one name may cost; a pattern that needs more for a name of at most 1024 bytes is refused rather than
    /// let a listing burn the server's CPU.
    static let stepsPerName = 200_000

    package struct TooComplex: Error {}

    /// Throws ``TooComplex`` when matching `text` would take more than ``stepsPerName`` steps.
    package func matches(_ text: String) throws -> Bool {
        let input = Array(text.unicodeScalars)
        var memo = Set<Int>()
        var steps = Glob.stepsPerName
        let result = Glob.match(tokens[...], input, 0, &memo, tokens.count, &steps)
        guard steps >= 0 else { throw TooComplex() }
        return result
    }

    /// Whether `tokens` matches `input[at...]` completely. `memo` records failed (token position, input position)
    /// pairs for the top-level token list so star backtracking stays polynomial.
    private static func match(
        _ tokens: ArraySlice<Token>, _ input: [Unicode.Scalar], _ at: Int, _ memo: inout Set<Int>, _ width: Int,
        _ steps: inout Int
    ) -> Bool {
        steps -= 1
        if steps < 0 { return false }
        guard let token = tokens.first else { return at == input.count }
        let key = at * (width + 1) + (tokens.startIndex)
        if memo.contains(key) { return false }
        let rest = tokens.dropFirst()
        var result = false
        switch token {
        case .literal(let c):
            result = at < input.count && input[at] == c && match(rest, input, at + 1, &memo, width, &steps)
        case .any: result = at < input.count && input[at] != "/" && match(rest, input, at + 1, &memo, width, &steps)
        case .set(let ranges, let negated):
            if at < input.count {
                let inSet = ranges.contains { $0.contains(input[at]) }
                result = inSet != negated && match(rest, input, at + 1, &memo, width, &steps)
            }
        case .star:
            var i = at
            while true {
                if match(rest, input, i, &memo, width, &steps) {
                    result = true
                    break
                }
                if i >= input.count || input[i] == "/" { break }
                i += 1
            }
        case .globstar:
            var i = at
            while i <= input.count {
                if match(rest, input, i, &memo, width, &steps) {
                    result = true
                    break
                }
                i += 1
            }
        case .segments:
            // Zero segments, or up to any slash: the rest must match from a segment's start.
            var i = at
            while i <= input.count {
                if (i == at || input[i - 1] == "/") && match(rest, input, i, &memo, width, &steps) {
                    result = true
                    break
                }
                i += 1
            }
        case .alternatives(let options):
            // Alternatives are expanded in place; they are short, so no memo beyond the top level.
            for option in options {
                var local = Set<Int>()
                let expanded = Array(option) + Array(rest)
                if match(expanded[...], input, at, &local, expanded.count, &steps) {
                    result = true
                    break
                }
            }
        }
        if !result { memo.insert(key) }
        return result
    }
}
