public import SiloCore

/// Why a request was allowed or denied, statement by statement: every `match` the evaluator tried against the path
/// (and whether it matched), every `allow` it evaluated with its outcome, and the statement that decided. Built by
/// ``RulesProgram/explain(_:documents:listChildMode:)`` for the console's rules playground and tooling; the
/// request path never builds one.
public struct RulesExplanation: Sendable {
    public struct Step: Sendable, Equatable {
        public enum Kind: String, Sendable {
            case match
            case allow
        }

        public enum Outcome: String, Sendable {
            /// A `match` whose pattern consumed the whole path: its `allow`s apply.
            case matched
            /// A `match` whose pattern consumed part of the path: its nested matches are tried on the rest.
            case prefix
            /// A `match` whose pattern does not fit the path.
            case notMatched
            /// An `allow` whose condition was true (or that has none): it grants.
            case granted
            /// An `allow` whose condition was false, not a bool, or an error.
            case denied
            /// An `allow` whose condition depends on upload bytes not known yet.
            case undetermined
            /// Evaluation stopped at a limit; nothing after this grants.
            case aborted
        }

        public var kind: Kind
        /// The statement as written, from its keyword to the end of its line (`match /b/{bucket}/o {` without the
        /// brace, `allow read: if request.auth != null;`), at most 200 characters.
        public var statement: String
        public var line: Int
        public var column: Int
        /// How deep the statement's block is nested below `service` (a top-level `match` is 0).
        public var depth: Int
        public var outcome: Outcome
        /// For an `allow`: what the condition evaluated to (`true`, `false`, `error: …`). For a matching `match`:
        /// its wildcard bindings, `{bucket}='b', {path=**}=/a/b`. Empty otherwise.
        public var detail: String
    }

    public var allowed: Bool
    /// The same sentence as ``RulesDecision/reason``.
    public var reason: String
    public var steps: [Step]
    /// Index into `steps` of the deciding statement: the `allow` that granted; when denied, the last `allow` that
    /// was evaluated and did not grant (a denial is the absence of a grant, so that is the nearest statement to
    /// blame), or the last `match` tried when no `allow` applied. Nil when nothing was tried.
    public var decidingStep: Int?
    /// Values passed to `debug()`, in evaluation order.
    public var debug: [String]
    /// True when `steps` stopped at ``RulesExplanation/maxSteps``.
    public var truncated: Bool
    public var expressionsEvaluated: Int

    /// Steps kept per explanation: a ruleset may have thousands of `match` blocks, and the explanation is answered
    /// as one JSON document.
    public static let maxSteps = 2_000
}

extension RulesProgram {
    /// The whole source text the program was compiled from.
    public var source: String { String(decoding: sourceMap.bytes, as: UTF8.self) }

    /// Evaluates `request` exactly as ``evaluate(_:documents:options:)`` does, recording each statement tried.
    public func explain(
        _ request: AccessRequest, documents: (any DocumentSource)? = nil, listChildMode: Bool = false
    ) -> RulesExplanation {
        var recording: ExplanationRecorder? = ExplanationRecorder()
        let decision = evaluate(
            request, documents: documents, options: Options(trace: true, explain: true, listChildMode: listChildMode),
            recorder: &recording)
        let recorder = recording ?? ExplanationRecorder()
        var steps = recorder.steps
        var deciding: Int?
        if decision.allowed {
            deciding = steps.lastIndex { $0.kind == .allow && $0.outcome == .granted }
        } else {
            deciding = steps.lastIndex { $0.kind == .allow } ?? steps.indices.last
        }
        for i in steps.indices { steps[i].statement = statement(at: recorder.offsets[i]) }
        return RulesExplanation(
            allowed: decision.allowed, reason: decision.reason, steps: steps, decidingStep: deciding,
            debug: decision.trace.filter { $0.hasPrefix("debug: ") }.map { String($0.dropFirst(7)) },
            truncated: recorder.truncated, expressionsEvaluated: decision.expressionsEvaluated)
    }

    /// The statement starting at `offset`, to the end of its line, without a trailing `{`.
    func statement(at offset: Int) -> String {
        let bytes = sourceMap.bytes
        guard offset >= 0, offset < bytes.count else { return "" }
        var end = offset
        while end < bytes.count, bytes[end] != 0x0A, end - offset < 800 { end += 1 }
        var text = String(decoding: bytes[offset..<end], as: UTF8.self).trimmingSpaces()
        if text.hasSuffix("{") { text = String(text.dropLast()).trimmingSpaces() }
        return text.count > 200 ? String(text.prefix(199)) + "…" : text
    }
}

/// What ``Search`` appends to while explaining; the statement texts are filled in at the end, from the offsets.
struct ExplanationRecorder {
    var steps: [RulesExplanation.Step] = []
    var offsets: [Int] = []
    var truncated = false

    mutating func record(
        _ kind: RulesExplanation.Step.Kind, offset: Int, position: (line: Int, column: Int), depth: Int,
        _ outcome: RulesExplanation.Step.Outcome, _ detail: String = ""
    ) {
        guard steps.count < RulesExplanation.maxSteps else {
            truncated = true
            return
        }
        steps.append(
            RulesExplanation.Step(
                kind: kind, statement: "", line: position.line, column: position.column, depth: depth,
                outcome: outcome, detail: detail))
        offsets.append(offset)
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" && $0 != "\r" }),
            let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" && $0 != "\r" })
        else { return "" }
        return String(scalars[first...last])
    }
}
