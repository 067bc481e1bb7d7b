import SiloCore
import SiloServerKit

/// The part of IAM Conditions' expression language (CEL) that Cloud Storage conditions use on a bucket: the request
/// time and the resource's name, type and service, compared with each other, with string and `timestamp("…")`
/// literals, and `startsWith`/`endsWith` on strings, joined by `&&`, `||`, `!` and parentheses. An expression
/// outside it is refused when the policy is set (never silently granting or denying later). A condition that does
/// not evaluate to true grants nothing.
///
/// See https://cloud.google.com/iam/docs/conditions-attribute-reference for the attributes.
package struct IAMCondition: Sendable {
    /// What a condition is evaluated against: the time of the decision and the resource it is about.
    struct Attributes: Sendable {
        var time: Timestamp
        var bucket: BucketName
        /// nil: the bucket itself (bucket permissions, and `objects.list`).
        var object: ObjectName?

        /// `projects/_/buckets/B` or `projects/_/buckets/B/objects/NAME`, as GCS names them in conditions.
        var resourceName: String {
            let bucketName = "projects/_/buckets/\(bucket.rawValue)"
            return object.map { bucketName + "/objects/" + $0.rawValue } ?? bucketName
        }

        var resourceType: String {
            object == nil ? "storage.googleapis.com/Bucket" : "storage.googleapis.com/Object"
        }
    }

    static let maxLength = 12_800
    static let maxDepth = 32

    private let root: Node

    /// Parses `expression`; throws `.invalidArgument` naming what is not understood.
    init(_ expression: String) throws {
        guard expression.utf8.count <= Self.maxLength else {
            throw Self.invalid("a condition expression is longer than \(Self.maxLength) bytes")
        }
        var parser = Parser(tokens: try Self.tokens(expression))
        root = try parser.expression(depth: 0)
        guard parser.atEnd else { throw Self.invalid("unexpected \(parser.describeNext()) in a condition expression") }
        guard root.type == .bool else { throw Self.invalid("a condition expression must be true or false") }
    }

    /// Whether the condition holds for `attributes`.
    func holds(_ attributes: Attributes) -> Bool {
        root.evaluate(attributes) == .bool(true)
    }

    static func invalid(_ message: String) -> StorageError {
        StorageError(.invalidArgument, "Invalid argument: \(message)")
    }

    // MARK: Values and the tree

    enum ValueType: Sendable { case bool, string, time }

    enum Value: Sendable, Equatable {
        case bool(Bool)
        case string(String)
        case time(Timestamp)
    }

    indirect enum Node: Sendable {
        case literal(Value)
        case attribute(String)
        case not(Node)
        case and(Node, Node)
        case or(Node, Node)
        case compare(String, Node, Node)
        case call(String, Node, Node)

        var type: ValueType {
            switch self {
            case .literal(.bool): .bool
            case .literal(.string): .string
            case .literal(.time): .time
            case .attribute(let name): name == "request.time" ? .time : .string
            case .not, .and, .or, .compare, .call: .bool
            }
        }

        func evaluate(_ a: Attributes) -> Value {
            switch self {
            case .literal(let v): return v
            case .attribute(let name):
                switch name {
                case "request.time": return .time(a.time)
                case "resource.name": return .string(a.resourceName)
                case "resource.type": return .string(a.resourceType)
                default: return .string("storage.googleapis.com")  // resource.service
                }
            case .not(let n): return .bool(n.evaluate(a) != .bool(true))
            case .and(let l, let r): return .bool(l.evaluate(a) == .bool(true) && r.evaluate(a) == .bool(true))
            case .or(let l, let r): return .bool(l.evaluate(a) == .bool(true) || r.evaluate(a) == .bool(true))
            case .call(let method, let target, let argument):
                guard case .string(let s) = target.evaluate(a), case .string(let x) = argument.evaluate(a) else {
                    return .bool(false)
                }
                return .bool(
                    method == "startsWith"
                        ? s.utf8.starts(with: x.utf8) : s.utf8.reversed().starts(with: x.utf8.reversed()))
            case .compare(let op, let l, let r):
                let order: Int
                switch (l.evaluate(a), r.evaluate(a)) {
                case (.time(let x), .time(let y)): order = x < y ? -1 : (x == y ? 0 : 1)
                case (.string(let x), .string(let y)):
                    order = x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : (x == y ? 0 : 1)
                case (.bool(let x), .bool(let y)):
                    guard op == "==" || op == "!=" else { return .bool(false) }
                    order = x == y ? 0 : 1
                default: return .bool(false)
                }
                switch op {
                case "==": return .bool(order == 0)
                case "!=": return .bool(order != 0)
                case "<": return .bool(order < 0)
                case "<=": return .bool(order <= 0)
                case ">": return .bool(order > 0)
                default: return .bool(order >= 0)
                }
            }
        }
    }

    // MARK: Tokens

    enum Token: Equatable {
        case identifier(String)
        case string(String)
        case symbol(String)
    }

    static let attributes: Set<String> = ["request.time", "resource.name", "resource.type", "resource.service"]

    static func tokens(_ text: String) throws -> [Token] {
        let bytes = Array(text.utf8)
        var tokens: [Token] = []
        var i = 0
        func isIdentifier(_ b: UInt8, first: Bool) -> Bool {
            (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || b == 0x5F
                || (!first && (b == 0x2E || (b >= 0x30 && b <= 0x39)))
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
                i += 1
            } else if b == 0x22 || b == 0x27 {
                // A quoted string; `\` escapes the quote and itself.
                var value: [UInt8] = []
                i += 1
                while true {
                    guard i < bytes.count else { throw invalid("an unterminated string in a condition expression") }
                    let c = bytes[i]
                    if c == b { break }
                    if c == 0x5C {
                        guard i + 1 < bytes.count, bytes[i + 1] == b || bytes[i + 1] == 0x5C else {
                            throw invalid("an escape other than \\\\ or \\\" in a condition string")
                        }
                        i += 1
                    }
                    value.append(bytes[i])
                    i += 1
                }
                i += 1
                tokens.append(.string(String(decoding: value, as: UTF8.self)))
            } else if isIdentifier(b, first: true) {
                let start = i
                while i < bytes.count, isIdentifier(bytes[i], first: false) { i += 1 }
                tokens.append(.identifier(String(decoding: bytes[start..<i], as: UTF8.self)))
            } else {
                let two = i + 1 < bytes.count ? String(decoding: bytes[i...(i + 1)], as: UTF8.self) : ""
                if ["&&", "||", "==", "!=", "<=", ">="].contains(two) {
                    tokens.append(.symbol(two))
                    i += 2
                } else if "()!<>,".utf8.contains(b) {
                    tokens.append(.symbol(String(UnicodeScalar(b))))
                    i += 1
                } else {
                    throw invalid("an unexpected character in a condition expression")
                }
            }
        }
        return tokens
    }

    // MARK: Parser

    struct Parser {
        var tokens: [Token]
        var index = 0

        var atEnd: Bool { index == tokens.count }

        func describeNext() -> String {
            switch index < tokens.count ? tokens[index] : nil {
            case .identifier(let s)?: "'\(s.prefix(40))'"
            case .string?: "a string"
            case .symbol(let s)?: "'\(s)'"
            case nil: "the end"
            }
        }

        mutating func take(_ symbol: String) -> Bool {
            guard index < tokens.count, tokens[index] == .symbol(symbol) else { return false }
            index += 1
            return true
        }

        mutating func expect(_ symbol: String) throws {
            guard take(symbol) else { throw IAMCondition.invalid("expected '\(symbol)', found \(describeNext())") }
        }

        mutating func expression(depth: Int) throws -> Node {
            guard depth < IAMCondition.maxDepth else { throw IAMCondition.invalid("a condition nests too deeply") }
            var left = try conjunction(depth: depth)
            while take("||") { left = .or(try boolean(left), try boolean(try conjunction(depth: depth))) }
            return left
        }

        mutating func conjunction(depth: Int) throws -> Node {
            var left = try unary(depth: depth)
            while take("&&") { left = .and(try boolean(left), try boolean(try unary(depth: depth))) }
            return left
        }

        func boolean(_ node: Node) throws -> Node {
            guard node.type == .bool else { throw IAMCondition.invalid("&&, || and ! join true-or-false terms") }
            return node
        }

        mutating func unary(depth: Int) throws -> Node {
            if take("!") { return .not(try boolean(try unary(depth: depth + 1))) }
            let left = try operand(depth: depth)
            for op in ["==", "!=", "<=", ">=", "<", ">"] where take(op) {
                let right = try operand(depth: depth)
                guard left.type == right.type else {
                    throw IAMCondition.invalid("a comparison of different kinds of value in a condition")
                }
                return .compare(op, left, right)
            }
            return left
        }

        mutating func operand(depth: Int) throws -> Node {
            guard index < tokens.count else { throw IAMCondition.invalid("a condition expression ends too early") }
            let token = tokens[index]
            index += 1
            switch token {
            case .symbol("("):
                let inner = try expression(depth: depth + 1)
                try expect(")")
                return inner
            case .string(let s): return .literal(.string(s))
            case .identifier("true"): return .literal(.bool(true))
            case .identifier("false"): return .literal(.bool(false))
            case .identifier("timestamp"):
                try expect("(")
                guard index < tokens.count, case .string(let text) = tokens[index], let time = Timestamp(rfc3339: text)
                else { throw IAMCondition.invalid("timestamp() takes an RFC 3339 time") }
                index += 1
                try expect(")")
                return .literal(.time(time))
            case .identifier(let name):
                for method in ["startsWith", "endsWith"] where name.hasSuffix("." + method) {
                    let target = String(name.dropLast(method.count + 1))
                    guard IAMCondition.attributes.contains(target), target != "request.time" else { break }
                    try expect("(")
                    guard index < tokens.count, case .string(let argument) = tokens[index] else {
                        throw IAMCondition.invalid("\(method)() takes a string")
                    }
                    index += 1
                    try expect(")")
                    return .call(method, .attribute(target), .literal(.string(argument)))
                }
                guard IAMCondition.attributes.contains(name) else {
                    throw IAMCondition.invalid(
                        "'\(name.prefix(60))' in a condition: this server evaluates request.time, resource.name, "
                            + "resource.type and resource.service, with startsWith and endsWith")
                }
                return .attribute(name)
            case .symbol(let s): throw IAMCondition.invalid("unexpected '\(s)' in a condition expression")
            }
        }
    }
}
