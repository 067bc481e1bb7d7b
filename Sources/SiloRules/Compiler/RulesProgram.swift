import SiloCore

/// A compiled Security Rules file for Cloud Storage: compile once, evaluate many times. Immutable and Sendable,
/// so one program serves every request thread; each evaluation keeps its state in its own `Interpreter`.
public struct RulesProgram: Sendable {
    public let fileName: String
    /// 1 or 2 (`rules_version`).
    public var version: Int { rules.version }
    let rules: CompiledRules
    let sourceMap: SourceMap

    init(fileName: String, rules: CompiledRules, sourceMap: SourceMap) {
        self.fileName = fileName
        self.rules = rules
        self.sourceMap = sourceMap
    }

    public static func compile(source: String, fileName: String) throws(RulesCompileError) -> RulesProgram {
        let bytes = Array(source.utf8)
        let map = SourceMap(bytes: bytes)
        func failure(_ items: [(offset: Int, message: String)]) -> RulesCompileError {
            // Past a screenful, more diagnostics only cost time (each column is counted from its line start).
            let sorted = items.sorted { $0.offset < $1.offset }
            var diagnostics = sorted.prefix(Limits.maxDiagnostics).map { item in
                let (line, column) = map.location(of: item.offset)
                return RulesDiagnostic(line: line, column: column, message: item.message)
            }
            if sorted.count > Limits.maxDiagnostics, let last = diagnostics.last {
                diagnostics.append(
                    RulesDiagnostic(
                        line: last.line, column: last.column,
                        message: "too many errors; \(sorted.count - Limits.maxDiagnostics) more not shown"))
            }
            return RulesCompileError(fileName: fileName, diagnostics: diagnostics)
        }
        guard bytes.count <= Limits.maxSourceBytes else {
            throw failure([(0, "ruleset is \(bytes.count) bytes; the limit is \(Limits.maxSourceBytes)")])
        }
        let syntax: RulesetSyntax
        do {
            var parser = try Parser(bytes: bytes)
            syntax = try parser.parseRuleset()
        } catch {
            throw failure([(error.offset, error.message)])
        }
        var resolver = Resolver(version: syntax.version)
        let rules = resolver.resolve(syntax)
        guard resolver.diagnostics.isEmpty else { throw failure(resolver.diagnostics) }
        return RulesProgram(fileName: fileName, rules: rules, sourceMap: map)
    }

    /// `FILE:LINE:COL` for a byte offset of the source.
    func position(_ offset: Int) -> String {
        let (line, column) = sourceMap.location(of: offset)
        return "\(fileName):\(line):\(column)"
    }
}

/// The outcome of one evaluation, with enough context for a log line.
public struct RulesDecision: Sendable {
    public var allowed: Bool
    /// Why, e.g. `allowed by 'allow read' at storage.rules:7:7` or `denied: no match block matches /b/B/o/x`.
    public var reason: String
    /// One line per evaluated `allow` (and `debug()` output) when tracing was requested; empty otherwise.
    public var trace: [String]
    public var expressionsEvaluated: Int
    /// True when the decision was reached without reading `request`, `resource` or a Firestore document: the same
    /// operation on the same path then always gets the same answer (until the rules change).
    public var dependsOnlyOnPath: Bool = false
    /// Not granted, but some `allow` depended on a value not known yet (`AccessRequest.bytesKnown` false): the
    /// request may be granted once it is known. False when granted.
    public var undetermined: Bool = false
    /// Conditions that evaluated to an error (a missing field, a wrong type; not a pending upload's unknown bytes)
    /// or aborted the evaluation at a limit: each such `allow` denied.
    public var errors: Int = 0
}
