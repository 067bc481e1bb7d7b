/// Walks resolved expressions for one request. One instance per evaluation: it holds the request-wide budgets
/// (``Limits``), the wildcard bindings of the candidate being tried, and the lazily built `request`/`resource`.
final class Interpreter {
    let rules: CompiledRules
    let variables: StorageVariables
    let documents: DocumentCache
    var bindings: [RulesValue]
    /// Set once a request-wide limit is hit; from then on everything is ⊥ and the request is denied.
    private(set) var abortReason: String?
    private var expressionsLeft = Limits.maxExpressions
    var workLeft = Limits.maxWork
    private var depth = 0
    private var callDepth = 0
    /// Values passed to `debug()`, when tracing.
    var debugLog: [String]?

    init(rules: CompiledRules, variables: StorageVariables, documents: DocumentCache) {
        self.rules = rules
        self.variables = variables
        self.documents = documents
        bindings = [RulesValue](repeating: .null, count: rules.slotCount)
    }

    func abort(_ reason: String) {
        if abortReason == nil { abortReason = reason }
    }

    var expressionsEvaluated: Int { Limits.maxExpressions - expressionsLeft }

    /// Charges bulk work (regex steps, element comparisons); false once the budget is gone.
    func charge(_ units: Int) -> Bool {
        workLeft -= units
        if workLeft < 0 {
            abort("work limit of \(Limits.maxWork) steps exceeded")
            return false
        }
        return true
    }

    func fault(_ message: String, _ at: Int) -> RulesValue { .error(RulesFault(message, offset: at)) }

    func eval(_ e: Expr, _ locals: [RulesValue]) -> RulesValue {
        if let abortReason { return fault(abortReason, e.offset) }
        expressionsLeft -= 1
        if expressionsLeft < 0 {
            abort("more than \(Limits.maxExpressions) expressions evaluated")
            return fault(abortReason!, e.offset)
        }
        depth += 1
        defer { depth -= 1 }
        if depth > Limits.maxEvaluationDepth {
            abort("evaluation nested deeper than \(Limits.maxEvaluationDepth)")
            return fault(abortReason!, e.offset)
        }
        switch e {
        case .literal(let v, _): return v
        case .regex(let pattern, _, _): return .string(pattern)
        case .local(let slot, _): return locals[slot]
        case .wildcard(let slot, _): return bindings[slot]
        case .request: return variables.request
        case .resource: return variables.resource
        case .list(let items, let at): return evalList(items, locals, at)
        case .map(let entries, let at): return evalMap(entries, locals, at)
        case .path(let pieces, let at): return evalPath(pieces, locals, at)
        case .unary(let op, let x, let at): return Operators.unary(op, eval(x, locals), at)
        case .binary(let op, let x, let y, let at):
            return Operators.binary(op, eval(x, locals), eval(y, locals), at, self)
        case .and(let items, let at): return evalAnd(items, locals, at)
        case .or(let items, let at): return evalOr(items, locals, at)
        case .conditional(let c, let x, let y, let at):
            switch eval(c, locals) {
            case .bool(true): return eval(x, locals)
            case .bool(false): return eval(y, locals)
            case .error(let f): return .error(f)
            case let other: return fault("condition of '?:' is \(other.typeName), not bool", at)
            }
        case .isType(let x, let type, _):
            let v = eval(x, locals)
            if case .error = v { return v }
            return .bool(Operators.isType(v, type))
        case .member(let x, let name, let at): return Operators.member(eval(x, locals), name, at)
        case .index(let x, let i, let at): return Operators.index(eval(x, locals), eval(i, locals), at)
        case .slice(let x, let i, let j, let at):
            return Operators.slice(eval(x, locals), eval(i, locals), eval(j, locals), at)
        case .userCall(let index, let args, let at): return callUser(index, args, locals, at)
        case .builtin(let builtin, let args, let at):
            var values: [RulesValue] = []
            values.reserveCapacity(args.count)
            for a in args {
                let v = eval(a, locals)
                // debug() passes errors through unchanged; every other built-in propagates them.
                if case .error = v, builtin != .debug { return v }
                values.append(v)
            }
            return Builtins.call(builtin, values, at, self)
        case .methodCall(let receiver, let method, let args, let at):
            let r = eval(receiver, locals)
            if case .error = r { return r }
            var values: [RulesValue] = []
            values.reserveCapacity(args.count)
            var regex: CompiledRegex?
            for (n, a) in args.enumerated() {
                if n == 0, case .regex(_, let compiled, _) = a { regex = compiled }
                let v = eval(a, locals)
                if case .error = v { return v }
                values.append(v)
            }
            return Methods.call(method, r, values, regex, at, self)
        case .identifier(_, let at), .call(_, _, let at), .method(_, _, _, let at):
            return fault("internal: unresolved name", at)
        }
    }

    /// CEL-style `&&`: false anywhere decides; otherwise an error wins over true — a certain error
    /// over an undetermined one (the conjunction can then never be true, whatever the unknown value is).
    private func evalAnd(_ items: [Expr], _ locals: [RulesValue], _ at: Int) -> RulesValue {
        var error: RulesFault?
        for item in items {
            switch eval(item, locals) {
            case .bool(true): continue
            case .bool(false): return .bool(false)
            case .error(let f): error = Self.keep(error, f, preferUndetermined: false)
            case let other:
                let f = RulesFault("operand of '&&' is \(other.typeName), not bool", offset: item.offset)
                error = Self.keep(error, f, preferUndetermined: false)
            }
        }
        return error.map { .error($0) } ?? .bool(true)
    }

    /// `||`: true anywhere decides; otherwise an error wins over false — an undetermined one over a certain one
    /// (the unknown operand may yet be true).
    private func evalOr(_ items: [Expr], _ locals: [RulesValue], _ at: Int) -> RulesValue {
        var error: RulesFault?
        for item in items {
            switch eval(item, locals) {
            case .bool(true): return .bool(true)
            case .bool(false): continue
            case .error(let f): error = Self.keep(error, f, preferUndetermined: true)
            case let other:
                let f = RulesFault("operand of '||' is \(other.typeName), not bool", offset: item.offset)
                error = Self.keep(error, f, preferUndetermined: true)
            }
        }
        return error.map { .error($0) } ?? .bool(false)
    }

    /// The first fault seen, unless a later one is of the preferred kind and the first is not.
    private static func keep(_ first: RulesFault?, _ next: RulesFault, preferUndetermined: Bool) -> RulesFault {
        guard let first else { return next }
        if first.undetermined != preferUndetermined && next.undetermined == preferUndetermined { return next }
        return first
    }

    private func evalList(_ items: [Expr], _ locals: [RulesValue], _ at: Int) -> RulesValue {
        var out: [RulesValue] = []
        out.reserveCapacity(items.count)
        for item in items {
            let v = eval(item, locals)
            if case .error = v { return v }
            out.append(v)
        }
        return .list(out)
    }

    private func evalMap(_ entries: [MapEntry], _ locals: [RulesValue], _ at: Int) -> RulesValue {
        var out: [String: RulesValue] = [:]
        for entry in entries {
            let k = eval(entry.key, locals)
            if case .error = k { return k }
            guard case .string(let key) = k else {
                return fault("map keys must be strings, not \(k.typeName)", entry.key.offset)
            }
            let v = eval(entry.value, locals)
            if case .error = v { return v }
            guard out.updateValue(v, forKey: key) == nil else {
                return fault("duplicate map key '\(key)'", entry.key.offset)
            }
        }
        return .map(out)
    }

    private func evalPath(_ pieces: [PathLiteralPiece], _ locals: [RulesValue], _ at: Int) -> RulesValue {
        var segments: [String] = []
        for piece in pieces {
            switch piece {
            case .segment(let s): segments.append(s)
            case .interpolated(let e):
                switch eval(e, locals) {
                case .string(let s): segments.append(s)
                case .int(let i): segments.append(String(i))
                case .path(let p): segments.append(contentsOf: p)
                case .error(let f): return .error(f)
                case let other: return fault("cannot interpolate \(other.typeName) into a path", e.offset)
                }
            }
        }
        return .path(segments)
    }

    /// Arguments and lets are evaluated in order; an error in one is carried as a value and matters only if the
    /// body uses it.
    private func callUser(_ index: Int, _ args: [Expr], _ locals: [RulesValue], _ at: Int) -> RulesValue {
        let function = rules.functions[index]
        var frame: [RulesValue] = []
        frame.reserveCapacity(function.parameterCount + function.lets.count)
        for a in args { frame.append(eval(a, locals)) }
        callDepth += 1
        defer { callDepth -= 1 }
        if callDepth > Limits.maxCallDepth {
            abort("function call depth exceeds \(Limits.maxCallDepth)")
            return fault(abortReason!, at)
        }
        for value in function.lets { frame.append(eval(value, frame)) }
        return eval(function.body, frame)
    }
}
