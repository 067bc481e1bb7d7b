/// Reserved words. Method and type names are not reserved; they are plain identifiers.
enum Keyword: String, Sendable {
    case rulesVersion = "rules_version"
    case service, match, allow, `if`, function, `return`, `let`, `true`, `false`, null, `in`, `is`
}

enum Punct: String, Sendable {
    case lbrace = "{"
    case rbrace = "}"
    case lparen = "("
    case rparen = ")"
    case lbracket = "["
    case rbracket = "]"
    case comma = ","
    case semicolon = ";"
    case colon = ":"
    case dot = "."
    case question = "?"
    case bang = "!"
    case assign = "="
    case eq = "=="
    case ne = "!="
    case lt = "<"
    case le = "<="
    case gt = ">"
    case ge = ">="
    case plus = "+"
    case minus = "-"
    case star = "*"
    case slash = "/"
    case percent = "%"
    case and = "&&"
    case or = "||"
}

enum TokenKind: Sendable, Equatable {
    case identifier(String)
    case keyword(Keyword)
    case int(Int64)
    case float(Double)
    case string(String)
    case bytes([UInt8])
    case punct(Punct)
    case end

    var describe: String {
        switch self {
        case .identifier(let s): "'\(s)'"
        case .keyword(let k): "'\(k.rawValue)'"
        case .int(let i): "'\(i)'"
        case .float(let d): "'\(d)'"
        case .string: "string literal"
        case .bytes: "bytes literal"
        case .punct(let p): "'\(p.rawValue)'"
        case .end: "end of file"
        }
    }
}

struct Token: Sendable {
    var kind: TokenKind
    /// Byte offsets into the source: `start..<end`.
    var start: Int
    var end: Int
}

/// A syntax error at a byte offset; the parser stops at the first one.
struct SyntaxError: Error {
    var offset: Int
    var message: String
}
