/// A compiled regular expression run by a Pike VM: all alternatives advance in lock step, so time is
/// O(input × program) whatever the pattern. Work is charged to a caller-supplied budget.
struct CompiledRegex: Sendable {
    enum Instruction: Sendable {
        case scalar(UInt32)
        case any
        case anyButNewline
        case charClass(Int)
        /// Try `first` before `second` (that order is what makes greedy and lazy differ).
        case split(Int, Int)
        case jump(Int)
        case assertion(RegexAssertion)
        case match
    }

    enum Outcome {
        case match(Range<Int>)
        case noMatch
        case exhausted
    }

    let program: [Instruction]
    let classes: [CharClass]

    init(pattern: String) throws(RegexError) {
        guard pattern.utf8.count <= Limits.maxRegexPatternBytes else { throw RegexError(message: "pattern too long") }
        var parser = RegexParser(pattern)
        let node = try parser.parse()
        var emitter = Emitter()
        try emitter.emit(node)
        try emitter.append(.match)
        program = emitter.program
        classes = emitter.classes
    }

    private struct Emitter {
        var program: [Instruction] = []
        var classes: [CharClass] = []

        mutating func append(_ i: Instruction) throws(RegexError) {
            guard program.count < Limits.maxRegexProgram else { throw RegexError(message: "regex too large") }
            program.append(i)
        }

        mutating func emit(_ node: RegexNode) throws(RegexError) {
            switch node {
            case .empty: break
            case .scalar(let c): try append(.scalar(c))
            case .any(let dotAll): try append(dotAll ? .any : .anyButNewline)
            case .charClass(let cls):
                classes.append(cls)
                try append(.charClass(classes.count - 1))
            case .assertion(let a): try append(.assertion(a))
            case .concat(let items): for item in items { try emit(item) }
            case .alternate(let branches):
                var jumps: [Int] = []
                for (n, branch) in branches.enumerated() {
                    if n < branches.count - 1 {
                        let split = program.count
                        try append(.split(split + 1, -1))
                        try emit(branch)
                        jumps.append(program.count)
                        try append(.jump(-1))
                        program[split] = .split(split + 1, program.count)
                    } else {
                        try emit(branch)
                    }
                }
                for j in jumps { program[j] = .jump(program.count) }
            case .repeated(let inner, let min, let max, let greedy):
                for _ in 0..<min { try emit(inner) }
                if let max {
                    var splits: [Int] = []
                    for _ in min..<max {
                        splits.append(program.count)
                        try append(.split(-1, -1))
                        try emit(inner)
                    }
                    let end = program.count
                    for s in splits { program[s] = greedy ? .split(s + 1, end) : .split(end, s + 1) }
                } else {
                    let loop = program.count
                    try append(.split(-1, -1))
                    try emit(inner)
                    try append(.jump(loop))
                    let end = program.count
                    program[loop] = greedy ? .split(loop + 1, end) : .split(end, loop + 1)
                }
            }
        }
    }

    /// Whole-string match (`matches` is implicitly anchored at both ends).
    func fullMatch(_ input: [UInt32], budget: inout Int) -> Bool? {
        switch run(input, from: 0, anchored: true, wholeInput: true, budget: &budget) {
        case .match: true
        case .noMatch: false
        case .exhausted: nil
        }
    }

    /// Leftmost-first match starting at or after `from`.
    func firstMatch(_ input: [UInt32], from: Int, budget: inout Int) -> Outcome {
        run(input, from: from, anchored: false, wholeInput: false, budget: &budget)
    }

    private static func isWord(_ c: UInt32) -> Bool { RegexParser.word.contains(c) }

    private func holds(_ a: RegexAssertion, _ input: [UInt32], _ pos: Int) -> Bool {
        switch a {
        case .textStart: return pos == 0
        case .textEnd: return pos == input.count
        case .lineStart: return pos == 0 || input[pos - 1] == 0x0A
        case .lineEnd: return pos == input.count || input[pos] == 0x0A
        case .wordBoundary, .notWordBoundary:
            let before = pos > 0 && CompiledRegex.isWord(input[pos - 1])
            let after = pos < input.count && CompiledRegex.isWord(input[pos])
            return (before != after) == (a == .wordBoundary)
        }
    }

    private struct Thread {
        var pc: Int
        var start: Int
    }

    private func run(_ input: [UInt32], from: Int, anchored: Bool, wholeInput: Bool, budget: inout Int) -> Outcome {
        var marks = [Int](repeating: -1, count: program.count)
        var generation = 0
        var current: [Thread] = []
        var next: [Thread] = []
        var stack: [Int] = []
        var matched: Range<Int>?

        // Follows the epsilon closure of `pc` depth-first, so threads land in `list` in priority order.
        func add(_ list: inout [Thread], _ pc: Int, _ start: Int, _ pos: Int, _ gen: Int) -> Bool {
            stack.append(pc)
            while let p = stack.popLast() {
                budget -= 1
                if budget < 0 { return false }
                if marks[p] == gen { continue }
                marks[p] = gen
                switch program[p] {
                case .jump(let t): stack.append(t)
                case .split(let a, let b):
                    stack.append(b)
                    stack.append(a)
                case .assertion(let a): if holds(a, input, pos) { stack.append(p + 1) }
                default: list.append(Thread(pc: p, start: start))
                }
            }
            return true
        }

        var pos = from
        var currentGen = generation
        guard add(&current, 0, from, from, currentGen) else { return .exhausted }
        while true {
            if matched == nil && !anchored && pos > from {
                guard add(&current, 0, pos, pos, currentGen) else { return .exhausted }
            }
            if current.isEmpty { break }
            generation += 1
            let nextGen = generation
            let c: UInt32? = pos < input.count ? input[pos] : nil
            threads: for t in current {
                budget -= 1
                if budget < 0 { return .exhausted }
                var advance = false
                switch program[t.pc] {
                case .match:
                    if wholeInput && pos != input.count { continue }
                    matched = t.start..<pos
                    // Lower-priority threads can no longer win.
                    break threads
                case .scalar(let s): advance = c == s
                case .any: advance = c != nil
                case .anyButNewline: advance = c != nil && c != 0x0A
                case .charClass(let k): advance = c.map { classes[k].contains($0) } ?? false
                default: break
                }
                if advance {
                    guard add(&next, t.pc + 1, t.start, pos + 1, nextGen) else { return .exhausted }
                }
            }
            if wholeInput, matched != nil { break }
            if pos >= input.count { break }
            swap(&current, &next)
            next.removeAll(keepingCapacity: true)
            currentGen = nextGen
            pos += 1
            if matched != nil && current.isEmpty { break }
        }
        return matched.map { .match($0) } ?? .noMatch
    }
}
