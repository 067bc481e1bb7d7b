/// The checked, name-resolved ruleset that the evaluator walks.
struct CompiledRules: Sendable {
    var version: Int
    var functions: [CompiledFunction]
    /// Top-level `match` blocks of every `service firebase.storage`.
    var blocks: [CompiledBlock]
    /// Wildcard slots needed by the deepest match chain.
    var slotCount: Int
}

struct CompiledFunction: Sendable {
    var name: String
    var offset: Int
    var parameterCount: Int
    /// Evaluated in order into the slots after the parameters.
    var lets: [Expr]
    var body: Expr
}

struct CompiledBlock: Sendable {
    var pieces: [MatchPiece]
    var allows: [CompiledAllow]
    var children: [CompiledBlock]
    var offset: Int
    /// `{name}` or `{name=**}` of each wildcard slot this block binds, for explanations.
    var wildcards: [(slot: Int, text: String)] = []
}

enum MatchPiece: Sendable {
    case literal(String)
    case single(slot: Int)
    case recursive(slot: Int)
}

struct CompiledAllow: Sendable {
    var methods: MethodSet
    var condition: Expr?
    var offset: Int
    /// `allow read, write` as written, for traces.
    var label: String
}

/// The granular storage methods an `allow` names; `read` and `write` expand at compile time.
struct MethodSet: OptionSet, Sendable {
    let rawValue: UInt8
    static let get = MethodSet(rawValue: 1)
    static let list = MethodSet(rawValue: 2)
    static let create = MethodSet(rawValue: 4)
    static let update = MethodSet(rawValue: 8)
    static let delete = MethodSet(rawValue: 16)
    static let read: MethodSet = [.get, .list]
    static let write: MethodSet = [.create, .update, .delete]

    init(rawValue: UInt8) { self.rawValue = rawValue }

    init?(name: String) {
        switch name {
        case "read": self = .read
        case "write": self = .write
        case "get": self = .get
        case "list": self = .list
        case "create": self = .create
        case "update": self = .update
        case "delete": self = .delete
        default: return nil
        }
    }
}
