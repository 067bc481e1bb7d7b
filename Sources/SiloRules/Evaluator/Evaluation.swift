public import SiloCore

extension RulesProgram {
    public struct Options: Sendable {
        /// Record every evaluated `allow` and `debug()` value in `RulesDecision.trace`.
        public var trace: Bool
        /// Compute a human-readable `reason`; off for the hot path of `RulesAccessPolicy`.
        public var explain: Bool
        /// Optional list mode: if listing prefix P is not granted, retry with a placeholder child of P that
        /// only a single-segment wildcard can match (bound to ""), as production reportedly allows.
        public var listChildMode: Bool

        public init(trace: Bool = false, explain: Bool = true, listChildMode: Bool = false) {
            self.trace = trace
            self.explain = explain
            self.listChildMode = listChildMode
        }
    }

    /// Decides one storage request. Never throws: anything that goes wrong denies.
    public func evaluate(
        _ request: AccessRequest, documents: (any DocumentSource)? = nil, options: Options = Options()
    ) -> RulesDecision {
        var none: ExplanationRecorder?
        return evaluate(request, documents: documents, options: options, recorder: &none)
    }

    /// The same, recording each statement tried when `recorder` is not nil
    /// (``explain(_:documents:listChildMode:)``).
    func evaluate(
        _ request: AccessRequest, documents: (any DocumentSource)?, options: Options,
        recorder: inout ExplanationRecorder?
    ) -> RulesDecision {
        let method: MethodSet =
            switch request.operation {
            case .get: .get
            case .list: .list
            case .create: .create
            case .update: .update
            case .delete: .delete
            }
        if request.operation == .list && rules.version < 2 {
            return RulesDecision(
                allowed: false, reason: "denied: list requires rules_version = '2'", trace: [], expressionsEvaluated: 0)
        }
        var segments = ["b", request.bucket.rawValue, "o"]
        if !request.path.isEmpty {
            segments += request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        }
        let interp = Interpreter(
            rules: rules, variables: StorageVariables(access: request, segments: segments),
            documents: DocumentCache(source: documents))
        if options.trace { interp.debugLog = [] }
        var search = Search(
            program: self, interp: interp, method: method, trace: options.trace, explain: options.explain)
        search.recorder = recorder
        search.run(segments, placeholder: nil)
        if !search.granted && options.listChildMode && request.operation == .list && interp.abortReason == nil {
            search.run(segments + [""], placeholder: segments.count)
        }
        recorder = search.recorder
        var trace = search.trace
        if let log = interp.debugLog { trace += log.map { "debug: " + $0 } }
        let reason: String
        if !options.explain {
            reason = ""
        } else if let granted = search.grantedBy {
            reason = "allowed by '\(granted.label)' at \(position(granted.offset))"
        } else if let abort = interp.abortReason {
            reason = "denied: \(abort)"
        } else if search.candidates == 0 {
            reason = "denied: no match block matches /" + segments.joined(separator: "/")
        } else if search.undetermined {
            reason = "undetermined: a condition depends on the upload's bytes, not received yet"
        } else if search.evaluated == 0 {
            reason = "denied: no allow statement for '\(request.operation.rawValue)' in the matching blocks"
        } else {
            reason = "denied: no condition was true" + (search.lastFailure.map { "; last: " + $0 } ?? "")
        }
        return RulesDecision(
            allowed: search.granted, reason: reason, trace: trace, expressionsEvaluated: interp.expressionsEvaluated,
            dependsOnlyOnPath: !interp.variables.wereRead && !interp.documents.wereUsed,
            undetermined: !search.granted && search.undetermined && interp.abortReason == nil)
    }
}

/// Backtracking match resolution that evaluates candidates' allows as it finds them and stops at
/// the first grant.
struct Search {
    let program: RulesProgram
    let interp: Interpreter
    let method: MethodSet
    let tracing: Bool
    let explaining: Bool
    var segments: [String] = []
    /// Index of the list-child placeholder segment, which only a single wildcard may consume.
    var placeholder: Int?
    var granted = false
    var grantedBy: CompiledAllow?
    var candidates = 0
    var evaluated = 0
    var steps = 0
    var trace: [String] = []
    var lastFailure: String?
    /// An allow's condition depended on a value not known yet.
    var undetermined = false
    /// Set only when explaining: every match tried and allow evaluated.
    var recorder: ExplanationRecorder?
    /// Nesting of the block being visited, for the recorder.
    private var depth = 0

    init(program: RulesProgram, interp: Interpreter, method: MethodSet, trace: Bool, explain: Bool) {
        self.program = program
        self.interp = interp
        self.method = method
        self.tracing = trace
        self.explaining = explain
    }

    mutating func run(_ segments: [String], placeholder: Int?) {
        self.segments = segments
        self.placeholder = placeholder
        for block in program.rules.blocks where enter(block, segment: 0) { return }
    }

    /// Visits a block from its first piece; when explaining, records it as not matched if its pattern never
    /// consumed its part of the path (a pattern that did records itself, in `visit`).
    private mutating func enter(_ block: CompiledBlock, segment: Int) -> Bool {
        guard recorder != nil else { return visit(block, piece: 0, segment: segment) }
        let before = recorder!.steps.count + (recorder!.truncated ? 1 : 0)
        if visit(block, piece: 0, segment: segment) { return true }
        if recorder!.steps.count + (recorder!.truncated ? 1 : 0) == before {
            record(.match, block.offset, .notMatched)
        }
        return false
    }

    private mutating func record(
        _ kind: RulesExplanation.Step.Kind, _ offset: Int, _ outcome: RulesExplanation.Step.Outcome,
        _ detail: String = ""
    ) {
        recorder?.record(
            kind, offset: offset, position: program.sourceMap.location(of: offset), depth: depth, outcome, detail)
    }

    /// Matches `block`'s pieces from `piece` against segments from `segment`. Literal and single pieces advance
    /// in a loop; only recursive wildcards and child blocks recurse, so depth is bounded by match nesting.
    private mutating func visit(_ block: CompiledBlock, piece start: Int, segment startSegment: Int) -> Bool {
        var seg = startSegment
        var p = start
        steps += 1
        if steps > Limits.maxMatchSteps {
            interp.abort("match resolution exceeded \(Limits.maxMatchSteps) steps")
            return false
        }
        if interp.abortReason != nil { return false }
        while p < block.pieces.count {
            switch block.pieces[p] {
            case .literal(let text):
                guard seg < segments.count, seg != placeholder, Compare.stringsEqual(segments[seg], text) else {
                    return false
                }
            case .single(let slot):
                guard seg < segments.count else { return false }
                interp.bindings[slot] = .string(segments[seg])
            case .recursive(let slot):
                let minimum = program.rules.version >= 2 ? 0 : 1
                // A recursive wildcard may not swallow the placeholder, but may follow it (matching zero segments).
                let limit = placeholder.map { seg <= $0 ? $0 : segments.count } ?? segments.count
                guard seg + minimum <= limit else { return false }
                for n in minimum...(limit - seg) {
                    interp.bindings[slot] = .path(Array(segments[seg..<(seg + n)]))
                    if visit(block, piece: p + 1, segment: seg + n) { return true }
                    if interp.abortReason != nil { return false }
                }
                return false
            }
            p += 1
            seg += 1
        }
        // A split of the path that leaves segments over for a block without nested matches goes nowhere: it is
        // not recorded (a recursive wildcard tries every split; the block is recorded once as not matched).
        if recorder != nil && (seg == segments.count || !block.children.isEmpty) {
            let bindings = block.wildcards.map { "\($0.text)=" + Builtins.describe(interp.bindings[$0.slot]) }
            record(.match, block.offset, seg == segments.count ? .matched : .prefix, bindings.joined(separator: ", "))
        }
        if seg == segments.count {
            candidates += 1
            if tryAllows(block) { return true }
        }
        depth += 1
        defer { depth -= 1 }
        for child in block.children where enter(child, segment: seg) { return true }
        return false
    }

    private mutating func tryAllows(_ block: CompiledBlock) -> Bool {
        for allow in block.allows where allow.methods.isSuperset(of: method) {
            evaluated += 1
            guard let condition = allow.condition else {
                return grant(allow, "true (no condition)")
            }
            let value = interp.eval(condition, [])
            if interp.abortReason != nil {
                if tracing { trace.append("\(program.position(allow.offset)) \(allow.label): aborted") }
                record(.allow, allow.offset, .aborted, interp.abortReason ?? "")
                return false
            }
            if case .bool(true) = value { return grant(allow, "true") }
            var unknown = false
            if case .error(let fault) = value, fault.undetermined {
                undetermined = true
                unknown = true
            }
            if tracing || explaining {
                let outcome: String
                switch value {
                case .bool(false): outcome = "false"
                case .error(let f):
                    outcome = "error: \(f.message)" + (f.offset >= 0 ? " at \(program.position(f.offset))" : "")
                default: outcome = "\(value.typeName), not bool"
                }
                let line = "\(program.position(allow.offset)) \(allow.label): \(outcome)"
                lastFailure = line
                if tracing { trace.append(line) }
                record(.allow, allow.offset, unknown ? .undetermined : .denied, outcome)
            }
        }
        return false
    }

    private mutating func grant(_ allow: CompiledAllow, _ outcome: String) -> Bool {
        granted = true
        grantedBy = allow
        if tracing { trace.append("\(program.position(allow.offset)) \(allow.label): \(outcome)") }
        record(.allow, allow.offset, .granted, outcome)
        return true
    }
}
