/// Recursive-descent parser for the rules language's grammar. It stops at the first syntax error.
///
/// Recursion is bounded: `nesting` counts open brackets, blocks and prefix operators, and every expression
/// carries its tree depth so that left-associative chains (`a + a + …`) cannot grow a tree the evaluator would
/// have to descend deeper than `Limits.maxExpressionDepth`.
struct Parser {
    var lexer: Lexer
    var token: Token
    var nesting = 0

    init(bytes: [UInt8]) throws(SyntaxError) {
        lexer = Lexer(bytes: bytes)
        token = Token(kind: .end, start: 0, end: 0)
        token = try lexer.next()
    }

    // MARK: Token helpers

    mutating func advance() throws(SyntaxError) { token = try lexer.next() }

    func isPunct(_ p: Punct) -> Bool { token.kind == .punct(p) }
    func isKeyword(_ k: Keyword) -> Bool { token.kind == .keyword(k) }

    mutating func expect(_ p: Punct, _ context: String) throws(SyntaxError) {
        guard isPunct(p) else { throw unexpected("expected '\(p.rawValue)' \(context)") }
        try advance()
    }

    func unexpected(_ what: String) -> SyntaxError {
        SyntaxError(offset: token.start, message: "\(what), found \(token.kind.describe)")
    }

    mutating func identifier(_ what: String) throws(SyntaxError) -> (String, Int) {
        guard case .identifier(let name) = token.kind else { throw unexpected("expected \(what)") }
        let at = token.start
        try advance()
        return (name, at)
    }

    mutating func enter() throws(SyntaxError) {
        nesting += 1
        if nesting > Limits.maxParseNesting {
            throw SyntaxError(offset: token.start, message: "nested too deeply (limit \(Limits.maxParseNesting))")
        }
    }

    mutating func leave() { nesting -= 1 }

    // MARK: Declarations

    mutating func parseRuleset() throws(SyntaxError) -> RulesetSyntax {
        var ruleset = RulesetSyntax()
        if isKeyword(.rulesVersion) {
            ruleset.versionOffset = token.start
            try advance()
            try expect(.assign, "after rules_version")
            guard case .string(let v) = token.kind else {
                throw unexpected("expected a string after 'rules_version ='")
            }
            let at = token.start
            try advance()
            switch v {
            case "1": ruleset.version = 1
            case "2": ruleset.version = 2
            default: throw SyntaxError(offset: at, message: "rules_version must be '1' or '2', not '\(v)'")
            }
            if isPunct(.semicolon) { try advance() }
        }
        while true {
            switch token.kind {
            case .end: return ruleset
            case .keyword(.function): ruleset.functions.append(try parseFunction())
            case .keyword(.service): ruleset.services.append(try parseService())
            case .keyword(.rulesVersion):
                throw SyntaxError(offset: token.start, message: "rules_version must come first and only once")
            default: throw unexpected("expected 'service' or 'function'")
            }
        }
    }

    mutating func parseService() throws(SyntaxError) -> ServiceSyntax {
        let at = token.start
        try advance()
        var (name, _) = try identifier("a service name")
        while isPunct(.dot) {
            try advance()
            let (part, _) = try anyWord("a service name part")
            name += "." + part
        }
        var service = ServiceSyntax(name: name, offset: at)
        try expect(.lbrace, "to open the service body")
        while !isPunct(.rbrace) {
            switch token.kind {
            case .keyword(.function): service.functions.append(try parseFunction())
            case .keyword(.match): service.matches.append(try parseMatch())
            case .keyword(.allow):
                throw SyntaxError(offset: token.start, message: "'allow' is only allowed inside a match block")
            default: throw unexpected("expected 'match', 'function' or '}'")
            }
        }
        try advance()
        return service
    }

    /// Identifiers and keywords are both acceptable after `.`.
    mutating func anyWord(_ what: String) throws(SyntaxError) -> (String, Int) {
        let at = token.start
        switch token.kind {
        case .identifier(let s):
            try advance()
            return (s, at)
        case .keyword(let k):
            try advance()
            return (k.rawValue, at)
        default: throw unexpected("expected \(what)")
        }
    }

    mutating func parseMatch() throws(SyntaxError) -> MatchSyntax {
        let at = token.start
        try enter()
        defer { leave() }
        // `token` is `match`; the lexer stands right after it, where the path begins.
        let pieces = try scanMatchPath()
        try advance()
        var block = MatchSyntax(pieces: pieces, offset: at)
        try expect(.lbrace, "to open the match block")
        while !isPunct(.rbrace) {
            switch token.kind {
            case .keyword(.function): block.functions.append(try parseFunction())
            case .keyword(.match): block.matches.append(try parseMatch())
            case .keyword(.allow): block.allows.append(try parseAllow())
            default: throw unexpected("expected 'allow', 'match', 'function' or '}'")
            }
        }
        try advance()
        return block
    }

    /// Match-path mode: `/seg`, `/{name}`, `/{name=**}` pieces until whitespace or the block's `{`.
    mutating func scanMatchPath() throws(SyntaxError) -> [MatchPieceSyntax] {
        try lexer.skipTrivia()
        var pieces: [MatchPieceSyntax] = []
        guard lexer.peekByte() == 0x2F else {
            throw SyntaxError(offset: lexer.position, message: "expected a match path starting with '/'")
        }
        while lexer.peekByte() == 0x2F {
            let at = lexer.position
            lexer.position += 1
            if lexer.peekByte() == 0x7B {
                lexer.position += 1
                let nameStart = lexer.position
                guard let first = lexer.peekByte(), Lexer.isIdentStart(first) else {
                    throw SyntaxError(offset: nameStart, message: "expected a wildcard name after '{'")
                }
                while let c = lexer.peekByte(), Lexer.isIdentPart(c) { lexer.position += 1 }
                let name = String(decoding: lexer.bytes[nameStart..<lexer.position], as: UTF8.self)
                var recursive = false
                if lexer.peekByte() == 0x3D {
                    // `{name=**}` matches the rest of the path; `{name=*}` one segment, the same as `{name}` (the
                    // form Firebase's own rules use, e.g. `match /{directChild=*}`).
                    guard lexer.peekByte(1) == 0x2A else {
                        throw SyntaxError(offset: lexer.position, message: "expected '=*' or '=**' in a wildcard")
                    }
                    recursive = lexer.peekByte(2) == 0x2A
                    lexer.position += recursive ? 3 : 2
                }
                guard lexer.peekByte() == 0x7D else {
                    throw SyntaxError(offset: lexer.position, message: "expected '}' to close the wildcard")
                }
                lexer.position += 1
                if Keyword(rawValue: name) != nil {
                    throw SyntaxError(offset: nameStart, message: "'\(name)' is reserved and cannot name a wildcard")
                }
                pieces.append(MatchPieceSyntax(kind: recursive ? .recursive(name) : .single(name), offset: at))
            } else {
                let start = lexer.position
                while let c = lexer.peekByte(), !Parser.endsSegment(c) { lexer.position += 1 }
                guard lexer.position > start else {
                    throw SyntaxError(offset: start, message: "empty segment in match path")
                }
                guard let text = String(validating: lexer.bytes[start..<lexer.position], as: UTF8.self) else {
                    throw SyntaxError(offset: start, message: "match path is not valid UTF-8")
                }
                pieces.append(MatchPieceSyntax(kind: .literal(text), offset: at))
            }
        }
        return pieces
    }

    static func endsSegment(_ c: UInt8) -> Bool {
        c == 0x2F || c == 0x7B || c == 0x7D || c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D
    }

    mutating func parseAllow() throws(SyntaxError) -> AllowSyntax {
        let at = token.start
        try advance()
        var methods: [(name: String, offset: Int)] = []
        repeat {
            if !methods.isEmpty { try advance() }
            let (name, offset) = try identifier("a method name (read, write, get, list, create, update, delete)")
            methods.append((name, offset))
        } while isPunct(.comma)
        var condition: Expr?
        if isPunct(.colon) {
            try advance()
            guard isKeyword(.if) else { throw unexpected("expected 'if' after ':'") }
            try advance()
            condition = try parseExpression()
        }
        if isPunct(.semicolon) { try advance() }
        return AllowSyntax(methods: methods, condition: condition, offset: at)
    }

    mutating func parseFunction() throws(SyntaxError) -> FunctionSyntax {
        let at = token.start
        try advance()
        let (name, _) = try identifier("a function name")
        try expect(.lparen, "after the function name")
        var parameters: [(name: String, offset: Int)] = []
        if !isPunct(.rparen) {
            repeat {
                if !parameters.isEmpty { try advance() }
                let (p, offset) = try identifier("a parameter name")
                parameters.append((p, offset))
            } while isPunct(.comma)
        }
        try expect(.rparen, "after the parameters")
        try expect(.lbrace, "to open the function body")
        var lets: [(name: String, value: Expr, offset: Int)] = []
        while isKeyword(.let) {
            try advance()
            let (n, offset) = try identifier("a name after 'let'")
            try expect(.assign, "after the let name")
            let value = try parseExpression()
            if isPunct(.semicolon) { try advance() }
            lets.append((n, value, offset))
        }
        guard isKeyword(.return) else { throw unexpected("expected 'let' or 'return' in the function body") }
        try advance()
        let body = try parseExpression()
        if isPunct(.semicolon) { try advance() }
        try expect(.rbrace, "to close the function body")
        return FunctionSyntax(name: name, offset: at, parameters: parameters, lets: lets, body: body)
    }
}
