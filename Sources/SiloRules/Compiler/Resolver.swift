/// Static checks (declarations, arity, recursion) and name resolution: turns the syntax tree into `CompiledRules`,
/// collecting every diagnostic rather than stopping at the first.
struct Resolver {
    private(set) var diagnostics: [(offset: Int, message: String)] = []
    private var functions: [CompiledFunction] = []
    private var calls: [[Int]] = []
    private var slotCount = 0
    private let version: Int

    init(version: Int) { self.version = version }

    /// Lexical scope: functions and wildcards declared by one block (or the file, or a service).
    private final class Scope {
        let parent: Scope?
        var functions: [String: Int] = [:]
        var wildcards: [String: Int] = [:]
        init(parent: Scope?) { self.parent = parent }

        func function(_ name: String) -> Int? { functions[name] ?? parent?.function(name) }
        func wildcard(_ name: String) -> Int? { wildcards[name] ?? parent?.wildcard(name) }
    }

    private struct Context {
        var scope: Scope
        var locals: [String: Int] = [:]
        /// The function whose body is being resolved, for the call graph.
        var caller: Int?
    }

    mutating func error(_ offset: Int, _ message: String) { diagnostics.append((offset, message)) }

    mutating func resolve(_ ruleset: RulesetSyntax) -> CompiledRules {
        let file = Scope(parent: nil)
        declare(ruleset.functions, in: file)
        var blocks: [CompiledBlock] = []
        // Other services (e.g. cloud.firestore) are parsed but ignored by the storage evaluator.
        for service in ruleset.services where service.name == "firebase.storage" {
            let scope = Scope(parent: file)
            declare(service.functions, in: scope)
            for match in service.matches { blocks.append(resolveMatch(match, parent: scope, slotBase: 0)) }
        }
        checkRecursion()
        return CompiledRules(version: version, functions: functions, blocks: blocks, slotCount: slotCount)
    }

    private mutating func resolveMatch(_ match: MatchSyntax, parent: Scope, slotBase: Int) -> CompiledBlock {
        let scope = Scope(parent: parent)
        var slot = slotBase
        var pieces: [MatchPiece] = []
        var recursiveCount = 0
        var wildcards: [(slot: Int, text: String)] = []
        for (i, piece) in match.pieces.enumerated() {
            switch piece.kind {
            case .literal(let s): pieces.append(.literal(s))
            case .single(let name), .recursive(let name):
                if scope.wildcard(name) != nil {
                    error(piece.offset, "wildcard '\(name)' is already declared by this or an enclosing match")
                }
                scope.wildcards[name] = slot
                if case .recursive = piece.kind {
                    recursiveCount += 1
                    if recursiveCount == 2 {
                        error(piece.offset, "a match path may contain only one recursive wildcard")
                    }
                    if version == 1 && i != match.pieces.count - 1 {
                        error(
                            piece.offset,
                            "recursive wildcard '{\(name)=**}' must be the last path segment unless rules_version = '2'"
                        )
                    }
                    pieces.append(.recursive(slot: slot))
                    wildcards.append((slot, "{\(name)=**}"))
                } else {
                    pieces.append(.single(slot: slot))
                    wildcards.append((slot, "{\(name)}"))
                }
                slot += 1
            }
        }
        slotCount = max(slotCount, slot)
        declare(match.functions, in: scope)
        var allows: [CompiledAllow] = []
        for allow in match.allows {
            var methods: MethodSet = []
            for (name, offset) in allow.methods {
                if let m = MethodSet(name: name) {
                    methods.formUnion(m)
                } else {
                    error(
                        offset, "unknown method '\(name)'; expected read, write, get, list, create, update or delete")
                }
            }
            var context = Context(scope: scope)
            let condition = allow.condition.map { resolve($0, &context) }
            let label = "allow " + allow.methods.map(\.name).joined(separator: ", ")
            allows.append(CompiledAllow(methods: methods, condition: condition, offset: allow.offset, label: label))
        }
        let children = match.matches.map { resolveMatch($0, parent: scope, slotBase: slot) }
        return CompiledBlock(
            pieces: pieces, allows: allows, children: children, offset: match.offset, wildcards: wildcards)
    }

    /// Registers a scope's functions first (declaration order is irrelevant), then resolves their bodies. A body
    /// can only call functions of this scope or enclosing ones, which are all registered by then.
    private mutating func declare(_ syntax: [FunctionSyntax], in scope: Scope) {
        var indices: [Int] = []
        for f in syntax {
            if Builtin.globalNames.contains(f.name) || Builtin.namespaces.contains(f.name) {
                error(f.offset, "function '\(f.name)' would shadow a built-in")
            } else if scope.functions[f.name] != nil {
                error(f.offset, "function '\(f.name)' is declared twice in the same scope")
            }
            if f.parameters.count > Limits.maxParameters {
                error(f.offset, "function '\(f.name)' has more than \(Limits.maxParameters) parameters")
            }
            if f.lets.count > Limits.maxLets {
                error(f.offset, "function '\(f.name)' has more than \(Limits.maxLets) let bindings")
            }
            let index = functions.count
            functions.append(
                CompiledFunction(
                    name: f.name, offset: f.offset, parameterCount: f.parameters.count, lets: [],
                    body: .literal(.null, at: 0)))
            calls.append([])
            if scope.functions[f.name] == nil { scope.functions[f.name] = index }
            indices.append(index)
        }
        for (f, index) in zip(syntax, indices) {
            var context = Context(scope: scope, caller: index)
            for (i, p) in f.parameters.enumerated() {
                if context.locals[p.name] != nil { error(p.offset, "parameter '\(p.name)' is declared twice") }
                context.locals[p.name] = i
            }
            var lets: [Expr] = []
            for binding in f.lets {
                let value = resolve(binding.value, &context)
                if context.locals[binding.name] != nil {
                    error(binding.offset, "'\(binding.name)' is already a parameter or let in this function")
                }
                context.locals[binding.name] = f.parameters.count + lets.count
                lets.append(value)
            }
            functions[index].lets = lets
            functions[index].body = resolve(f.body, &context)
        }
    }

    /// No recursion, direct or indirect: repeatedly drop functions that call nothing left; whatever
    /// remains calls into a cycle, and those that can reach themselves are reported.
    private mutating func checkRecursion() {
        let n = functions.count
        var remaining = Set(0..<n)
        var changed = true
        while changed {
            changed = false
            for f in remaining where calls[f].allSatisfy({ !remaining.contains($0) }) {
                remaining.remove(f)
                changed = true
            }
        }
        for f in remaining.sorted() {
            var seen = Set<Int>()
            var stack = calls[f]
            var cyclic = false
            while let g = stack.popLast() {
                if g == f {
                    cyclic = true
                    break
                }
                if seen.insert(g).inserted { stack.append(contentsOf: calls[g]) }
            }
            if cyclic {
                error(functions[f].offset, "function '\(functions[f].name)' is recursive; recursion is not allowed")
            }
        }
    }

    private func placeholder(_ at: Int) -> Expr { .literal(.error(RulesFault("unresolved", offset: at)), at: at) }

    private func isNamespace(_ e: Expr, _ context: Context) -> String? {
        guard case .identifier(let name, _) = e, Builtin.namespaces.contains(name),
            context.locals[name] == nil, context.scope.wildcard(name) == nil
        else { return nil }
        return name
    }

    private mutating func resolve(_ e: Expr, _ c: inout Context) -> Expr {
        switch e {
        case .literal, .local, .wildcard, .request, .resource, .regex: return e
        case .list(let items, let at): return .list(items.map { resolve($0, &c) }, at: at)
        case .map(let entries, let at):
            return .map(entries.map { MapEntry(key: resolve($0.key, &c), value: resolve($0.value, &c)) }, at: at)
        case .path(let pieces, let at):
            return .path(
                pieces.map {
                    switch $0 {
                    case .segment: $0
                    case .interpolated(let inner): .interpolated(resolve(inner, &c))
                    }
                }, at: at)
        case .unary(let op, let x, let at): return .unary(op, resolve(x, &c), at: at)
        case .binary(let op, let x, let y, let at): return .binary(op, resolve(x, &c), resolve(y, &c), at: at)
        case .and(let items, let at): return .and(items.map { resolve($0, &c) }, at: at)
        case .or(let items, let at): return .or(items.map { resolve($0, &c) }, at: at)
        case .conditional(let x, let y, let z, let at):
            return .conditional(resolve(x, &c), resolve(y, &c), resolve(z, &c), at: at)
        case .isType(let x, let t, let at): return .isType(resolve(x, &c), t, at: at)
        case .index(let x, let i, let at): return .index(resolve(x, &c), resolve(i, &c), at: at)
        case .slice(let x, let i, let j, let at): return .slice(resolve(x, &c), resolve(i, &c), resolve(j, &c), at: at)
        case .member(let x, let name, let at):
            if let ns = isNamespace(x, c) {
                error(x.offset, "'\(ns).\(name)' is not a value; namespace functions must be called")
                return placeholder(at)
            }
            return .member(resolve(x, &c), name, at: at)
        case .identifier(let name, let at):
            if let slot = c.locals[name] { return .local(slot, at: at) }
            if let slot = c.scope.wildcard(name) { return .wildcard(slot, at: at) }
            switch name {
            case "request": return .request(at: at)
            case "resource": return .resource(at: at)
            default: break
            }
            if Builtin.namespaces.contains(name) {
                error(at, "namespace '\(name)' can only be used to call its functions, as in \(name).f(...)")
            } else if Builtin.globalNames.contains(name) || c.scope.function(name) != nil {
                error(at, "function '\(name)' used as a value")
            } else {
                error(at, "unknown identifier '\(name)'")
            }
            return placeholder(at)
        case .call(let name, let args, let at):
            let resolvedArgs = args.map { resolve($0, &c) }
            if let index = c.scope.function(name) {
                if functions[index].parameterCount != args.count {
                    error(
                        at, "function '\(name)' takes \(functions[index].parameterCount) arguments, not \(args.count)")
                }
                if let caller = c.caller { calls[caller].append(index) }
                return .userCall(index, resolvedArgs, at: at)
            }
            if Builtin.globalNames.contains(name), let builtin = Builtin(rawValue: name) {
                if builtin.arity != args.count {
                    error(at, "\(name)() takes \(builtin.arity) argument, not \(args.count)")
                }
                return .builtin(builtin, resolvedArgs, at: at)
            }
            error(at, "unknown function '\(name)'")
            return placeholder(at)
        case .method(let receiver, let name, let args, let at):
            let resolvedArgs = args.map { resolve($0, &c) }
            if let ns = isNamespace(receiver, c) {
                guard let builtin = Builtin(rawValue: ns + "." + name) else {
                    error(at, "unknown function '\(ns).\(name)'")
                    return placeholder(at)
                }
                if builtin.arity != args.count {
                    error(at, "\(ns).\(name)() takes \(builtin.arity) arguments, not \(args.count)")
                }
                return .builtin(builtin, resolvedArgs, at: at)
            }
            let method = Method(rawValue: name) ?? .unknown
            var finalArgs = resolvedArgs
            if method == .matches || method == .replace || method == .split,
                case .literal(.string(let pattern), let patternAt)? = resolvedArgs.first
            {
                // Compile literal patterns once; an invalid one stays uncompiled and is ⊥ at run time.
                finalArgs[0] = .regex(pattern, try? CompiledRegex(pattern: pattern), at: patternAt)
            }
            if method == .unknown {
                return .methodCall(
                    resolve(receiver, &c), .unknown, [.literal(.string(name), at: at)] + finalArgs, at: at)
            }
            return .methodCall(resolve(receiver, &c), method, finalArgs, at: at)
        case .userCall, .builtin, .methodCall: return e
        }
    }
}
