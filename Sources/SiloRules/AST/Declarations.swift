/// The parsed ruleset, before static checks.
struct RulesetSyntax: Sendable {
    var version = 1
    var versionOffset = 0
    var functions: [FunctionSyntax] = []
    var services: [ServiceSyntax] = []
}

struct ServiceSyntax: Sendable {
    var name: String
    var offset: Int
    var functions: [FunctionSyntax] = []
    var matches: [MatchSyntax] = []
}

struct MatchSyntax: Sendable {
    var pieces: [MatchPieceSyntax]
    var offset: Int
    var functions: [FunctionSyntax] = []
    var matches: [MatchSyntax] = []
    var allows: [AllowSyntax] = []
}

enum MatchPieceKind: Sendable, Equatable {
    case literal(String)
    case single(String)
    case recursive(String)
}

struct MatchPieceSyntax: Sendable {
    var kind: MatchPieceKind
    var offset: Int
}

struct AllowSyntax: Sendable {
    var methods: [(name: String, offset: Int)]
    var condition: Expr?
    var offset: Int
}

struct FunctionSyntax: Sendable {
    var name: String
    var offset: Int
    var parameters: [(name: String, offset: Int)]
    var lets: [(name: String, value: Expr, offset: Int)]
    var body: Expr
}
