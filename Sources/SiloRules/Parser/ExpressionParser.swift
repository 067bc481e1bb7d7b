/// Expression grammar, lowest to highest precedence. Each function returns the expression and its tree
/// depth; `checked` rejects trees deeper than the evaluator is allowed to descend.
extension Parser {
    typealias Parsed = (expr: Expr, depth: Int)

    mutating func parseExpression() throws(SyntaxError) -> Expr {
        try parseExpr().expr
    }

    func checked(_ expr: Expr, _ depth: Int) throws(SyntaxError) -> Parsed {
        if depth > Limits.maxExpressionDepth {
            throw SyntaxError(
                offset: expr.offset, message: "expression nested too deeply (limit \(Limits.maxExpressionDepth))")
        }
        return (expr, depth)
    }

    mutating func parseExpr() throws(SyntaxError) -> Parsed {
        try enter()
        defer { leave() }
        let condition = try parseOr()
        guard isPunct(.question) else { return condition }
        try advance()
        let yes = try parseExpr()
        try expect(.colon, "in the conditional expression")
        let no = try parseExpr()
        return try checked(
            .conditional(condition.expr, yes.expr, no.expr, at: condition.expr.offset),
            1 + max(condition.depth, yes.depth, no.depth))
    }

    mutating func parseOr() throws(SyntaxError) -> Parsed {
        let first = try parseAnd()
        guard isPunct(.or) else { return first }
        var items = [first.expr]
        var depth = first.depth
        while isPunct(.or) {
            try advance()
            let next = try parseAnd()
            items.append(next.expr)
            depth = max(depth, next.depth)
        }
        return try checked(.or(items, at: first.expr.offset), depth + 1)
    }

    mutating func parseAnd() throws(SyntaxError) -> Parsed {
        let first = try parseRelation()
        guard isPunct(.and) else { return first }
        var items = [first.expr]
        var depth = first.depth
        while isPunct(.and) {
            try advance()
            let next = try parseRelation()
            items.append(next.expr)
            depth = max(depth, next.depth)
        }
        return try checked(.and(items, at: first.expr.offset), depth + 1)
    }

    mutating func parseRelation() throws(SyntaxError) -> Parsed {
        var left = try parseAdditive()
        while true {
            let op: BinaryOp
            let at = token.start
            switch token.kind {
            case .punct(.eq): op = .equal
            case .punct(.ne): op = .notEqual
            case .punct(.lt): op = .less
            case .punct(.le): op = .lessEqual
            case .punct(.gt): op = .greater
            case .punct(.ge): op = .greaterEqual
            case .keyword(.in): op = .in
            case .keyword(.is):
                try advance()
                let (name, nameAt) = try anyWord("a type name after 'is'")
                guard let type = TypeName(rawValue: name) else {
                    throw SyntaxError(offset: nameAt, message: "unknown type name '\(name)'")
                }
                left = try checked(.isType(left.expr, type, at: at), left.depth + 1)
                continue
            default: return left
            }
            try advance()
            let right = try parseAdditive()
            left = try checked(.binary(op, left.expr, right.expr, at: at), 1 + max(left.depth, right.depth))
        }
    }

    mutating func parseAdditive() throws(SyntaxError) -> Parsed {
        var left = try parseMultiplicative()
        while true {
            let op: BinaryOp
            switch token.kind {
            case .punct(.plus): op = .add
            case .punct(.minus): op = .subtract
            default: return left
            }
            let at = token.start
            try advance()
            let right = try parseMultiplicative()
            left = try checked(.binary(op, left.expr, right.expr, at: at), 1 + max(left.depth, right.depth))
        }
    }

    mutating func parseMultiplicative() throws(SyntaxError) -> Parsed {
        var left = try parseUnary()
        while true {
            let op: BinaryOp
            switch token.kind {
            case .punct(.star): op = .multiply
            case .punct(.slash): op = .divide
            case .punct(.percent): op = .remainder
            default: return left
            }
            let at = token.start
            try advance()
            let right = try parseUnary()
            left = try checked(.binary(op, left.expr, right.expr, at: at), 1 + max(left.depth, right.depth))
        }
    }

    mutating func parseUnary() throws(SyntaxError) -> Parsed {
        var ops: [(UnaryOp, Int)] = []
        while true {
            if isPunct(.bang) {
                ops.append((.not, token.start))
            } else if isPunct(.minus) {
                ops.append((.negate, token.start))
            } else {
                break
            }
            if ops.count > Limits.maxExpressionDepth {
                throw SyntaxError(offset: token.start, message: "too many prefix operators")
            }
            try advance()
        }
        var operand = try parsePostfix()
        for (op, at) in ops.reversed() {
            // Fold `-literal` so that the most negative int can be written and constants stay constants.
            if op == .negate, case .literal(.int(let v), _) = operand.expr, v != Int64.min {
                operand = (.literal(.int(-v), at: at), operand.depth)
            } else if op == .negate, case .literal(.float(let v), _) = operand.expr {
                operand = (.literal(.float(-v), at: at), operand.depth)
            } else {
                operand = try checked(.unary(op, operand.expr, at: at), operand.depth + 1)
            }
        }
        return operand
    }

    mutating func parsePostfix() throws(SyntaxError) -> Parsed {
        var base = try parsePrimary()
        while true {
            let at = token.start
            if isPunct(.dot) {
                try advance()
                let (name, _) = try anyWord("a field or method name after '.'")
                if isPunct(.lparen) {
                    let args = try parseArguments()
                    base = try checked(.method(base.expr, name, args.exprs, at: at), 1 + max(base.depth, args.depth))
                } else {
                    base = try checked(.member(base.expr, name, at: at), base.depth + 1)
                }
            } else if isPunct(.lbracket) {
                try advance()
                let index = try parseExpr()
                if isPunct(.colon) {
                    try advance()
                    let end = try parseExpr()
                    try expect(.rbracket, "to close the range")
                    base = try checked(
                        .slice(base.expr, index.expr, end.expr, at: at), 1 + max(base.depth, index.depth, end.depth))
                } else {
                    try expect(.rbracket, "to close the index")
                    base = try checked(.index(base.expr, index.expr, at: at), 1 + max(base.depth, index.depth))
                }
            } else {
                return base
            }
        }
    }

    mutating func parseArguments() throws(SyntaxError) -> (exprs: [Expr], depth: Int) {
        try expect(.lparen, "to open the arguments")
        var exprs: [Expr] = []
        var depth = 0
        while !isPunct(.rparen) {
            let e = try parseExpr()
            exprs.append(e.expr)
            depth = max(depth, e.depth)
            if isPunct(.comma) { try advance() } else { break }
        }
        try expect(.rparen, "to close the arguments")
        return (exprs, depth)
    }

    mutating func parsePrimary() throws(SyntaxError) -> Parsed {
        let at = token.start
        switch token.kind {
        case .keyword(.null):
            try advance()
            return (.literal(.null, at: at), 1)
        case .keyword(.true):
            try advance()
            return (.literal(.bool(true), at: at), 1)
        case .keyword(.false):
            try advance()
            return (.literal(.bool(false), at: at), 1)
        case .int(let v):
            try advance()
            return (.literal(.int(v), at: at), 1)
        case .float(let v):
            try advance()
            return (.literal(.float(v), at: at), 1)
        case .string(let s):
            try advance()
            return (.literal(.string(s), at: at), 1)
        case .bytes(let b):
            try advance()
            return (.literal(.bytes(b), at: at), 1)
        case .identifier(let name):
            try advance()
            if isPunct(.lparen) {
                let args = try parseArguments()
                return try checked(.call(name, args.exprs, at: at), args.depth + 1)
            }
            return (.identifier(name, at: at), 1)
        case .punct(.lparen):
            try advance()
            let inner = try parseExpr()
            try expect(.rparen, "to close '('")
            return inner
        case .punct(.lbracket):
            try enter()
            defer { leave() }
            try advance()
            var items: [Expr] = []
            var depth = 0
            while !isPunct(.rbracket) {
                let e = try parseExpr()
                items.append(e.expr)
                depth = max(depth, e.depth)
                if isPunct(.comma) { try advance() } else { break }
            }
            try expect(.rbracket, "to close the list")
            return try checked(.list(items, at: at), depth + 1)
        case .punct(.lbrace):
            try enter()
            defer { leave() }
            try advance()
            var entries: [MapEntry] = []
            var depth = 0
            while !isPunct(.rbrace) {
                let k = try parseExpr()
                try expect(.colon, "between a map key and its value")
                let v = try parseExpr()
                entries.append(MapEntry(key: k.expr, value: v.expr))
                depth = max(depth, k.depth, v.depth)
                if isPunct(.comma) { try advance() } else { break }
            }
            try expect(.rbrace, "to close the map")
            return try checked(.map(entries, at: at), depth + 1)
        case .punct(.slash):
            return try parsePathLiteral()
        default:
            throw unexpected("expected an expression")
        }
    }

    /// Path-literal mode: rescans from the `/` just read. Segments are words, `(word)` or `$(expr)`.
    mutating func parsePathLiteral() throws(SyntaxError) -> Parsed {
        let at = token.start
        lexer.position = token.start
        var pieces: [PathLiteralPiece] = []
        var depth = 0
        while lexer.peekByte() == 0x2F {
            let next = lexer.peekByte(1)
            let startsSegment =
                next.map { Parser.isPathWordByte($0) || $0 == 0x28 || ($0 == 0x24 && lexer.peekByte(2) == 0x28) }
                ?? false
            if !startsSegment {
                if pieces.isEmpty {
                    throw SyntaxError(offset: lexer.position, message: "expected a path segment after '/'")
                }
                break
            }
            lexer.position += 1
            if lexer.peekByte() == 0x24 {
                lexer.position += 2
                try advance()
                try enter()
                let inner = try parseExpr()
                leave()
                guard isPunct(.rparen) else { throw unexpected("expected ')' to close '$('") }
                lexer.position = token.end
                pieces.append(.interpolated(inner.expr))
                depth = max(depth, inner.depth)
            } else if lexer.peekByte() == 0x28 {
                lexer.position += 1
                let word = scanPathWord()
                guard !word.isEmpty, lexer.peekByte() == 0x29 else {
                    throw SyntaxError(offset: lexer.position, message: "expected '(word)' in a path literal")
                }
                lexer.position += 1
                pieces.append(.segment("(" + word + ")"))
            } else {
                pieces.append(.segment(scanPathWord()))
            }
        }
        try advance()
        return try checked(.path(pieces, at: at), depth + 1)
    }

    mutating func scanPathWord() -> String {
        let start = lexer.position
        while let c = lexer.peekByte(), Parser.isPathWordByte(c) { lexer.position += 1 }
        return String(decoding: lexer.bytes[start..<lexer.position], as: UTF8.self)
    }

    /// `[A-Za-z0-9_\-.~%@+:]`.
    static func isPathWordByte(_ c: UInt8) -> Bool {
        Lexer.isIdentPart(c) || c == 0x2D || c == 0x2E || c == 0x7E || c == 0x25 || c == 0x40 || c == 0x2B
            || c == 0x3A
    }
}
