/// An expression. The parser produces the name-based cases (`identifier`, `call`, `method`); the resolver
/// (static checks) rewrites them into the resolved cases, so evaluation never looks a name up by string.
/// Every case carries `at`, the byte offset of the construct in the source, for diagnostics and traces.
indirect enum Expr: Sendable {
    case literal(RulesValue, at: Int)
    case list([Expr], at: Int)
    case map([MapEntry], at: Int)
    case path([PathLiteralPiece], at: Int)
    case unary(UnaryOp, Expr, at: Int)
    case binary(BinaryOp, Expr, Expr, at: Int)
    /// `&&` and `||` chains are flattened so that `a || b || …` of any length stays shallow.
    case and([Expr], at: Int)
    case or([Expr], at: Int)
    case conditional(Expr, Expr, Expr, at: Int)
    case isType(Expr, TypeName, at: Int)
    case member(Expr, String, at: Int)
    case index(Expr, Expr, at: Int)
    case slice(Expr, Expr, Expr, at: Int)

    // Produced by the parser, replaced by the resolver.
    case identifier(String, at: Int)
    case call(String, [Expr], at: Int)
    case method(Expr, String, [Expr], at: Int)

    // Produced by the resolver.
    /// A parameter or `let` of the enclosing function, by slot.
    case local(Int, at: Int)
    /// A match wildcard, by its slot in the match chain.
    case wildcard(Int, at: Int)
    case request(at: Int)
    case resource(at: Int)
    case userCall(Int, [Expr], at: Int)
    case builtin(Builtin, [Expr], at: Int)
    case methodCall(Expr, Method, [Expr], at: Int)
    /// A string literal used as a regular expression, compiled once at load time; evaluates to the string.
    case regex(String, CompiledRegex?, at: Int)

    var offset: Int {
        switch self {
        case .literal(_, let at), .list(_, let at), .map(_, let at), .path(_, let at), .unary(_, _, let at),
            .binary(_, _, _, let at), .and(_, let at), .or(_, let at), .conditional(_, _, _, let at),
            .isType(_, _, let at), .member(_, _, let at), .index(_, _, let at), .slice(_, _, _, let at),
            .identifier(_, let at), .call(_, _, let at), .method(_, _, _, let at), .local(_, let at),
            .wildcard(_, let at), .request(let at), .resource(let at), .userCall(_, _, let at),
            .builtin(_, _, let at), .methodCall(_, _, _, let at), .regex(_, _, let at):
            at
        }
    }
}

struct MapEntry: Sendable {
    var key: Expr
    var value: Expr
}

enum PathLiteralPiece: Sendable {
    case segment(String)
    case interpolated(Expr)
}

enum UnaryOp: Sendable {
    case not, negate
}

enum BinaryOp: String, Sendable {
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case remainder = "%"
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessEqual = "<="
    case greater = ">"
    case greaterEqual = ">="
    case `in` = "in"
}

/// The names accepted after `is`.
enum TypeName: String, Sendable {
    case bool, bytes, constraint, duration, float, int, latlng, list, map
    case mapDiff = "map_diff"
    case number, path, set, string, timestamp
}
