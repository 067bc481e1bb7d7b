import SiloCore
import SiloServerKit
import SiloWire

/// The JSON API's `fields` selector (a partial response): which members of a response a client wants.
///
/// Its syntax is Google's: `a,b` selects several members, `a/b` a member inside one, `a(b,c)` several inside one, and
/// `*` every member at its level. A selection inside an array applies to each element, so `items(name,size)` keeps
/// two members of every listed object. A member selected and also selected into (`acl,acl/role`) is kept whole.
/// docs/gcs-api.md, "Partial responses", says what Silo checks and where it differs from GCS.
struct FieldSelection: Equatable {
    /// What is kept of one member: all of it, or the members selected inside it.
    indirect enum Keep: Equatable {
        case whole
        case members([String: Keep])
    }

    let top: [String: Keep]

    /// The deepest nesting of parentheses and slashes a selector may have, and the most names it may hold: GCS
    /// resources are a few levels deep, and a selector is parsed on every request that carries one.
    static let maxDepth = 16
    static let maxNames = 512

    /// Parses `text`; throws ``StorageError/Code/invalidArgument`` naming the selector when it is malformed.
    init(parsing text: String) throws {
        var parser = Parser(Array(text.utf8), text: text)
        top = try parser.selection(depth: 0)
        guard parser.atEnd else { throw parser.invalid() }
    }

    /// `value` with only the selected members; members the value does not have are simply absent, as GCS answers.
    func apply(to value: JSONValue) -> JSONValue {
        Self.keep(value, .members(top)) ?? .object(JSONObject())
    }

    /// Nil when nothing of `value` is selected: an object none of whose members are, or a scalar selected into.
    private static func keep(_ value: JSONValue, _ keep: Keep) -> JSONValue? {
        guard case .members(let selected) = keep else { return value }
        switch value {
        case .object(let object):
            var kept = JSONObject()
            for (key, member) in object.members {
                guard let inner = selected[key] ?? selected["*"], let value = Self.keep(member, inner) else { continue }
                kept.members.append((key, value))
            }
            return kept.members.isEmpty ? nil : .object(kept)
        case .array(let elements):
            let kept = elements.compactMap { Self.keep($0, keep) }
            return kept.isEmpty ? nil : .array(kept)
        case .null, .bool, .number, .string:
            return nil
        }
    }

    /// Every name the selector uses, with the names of the members it sits inside (for ``FieldVocabulary``).
    func forEachName(_ body: (_ name: String, _ parents: [String]) throws -> Void) rethrows {
        func walk(_ members: [String: Keep], _ parents: [String]) throws {
            for (name, keep) in members {
                try body(name, parents)
                if case .members(let inner) = keep { try walk(inner, parents + [name]) }
            }
        }
        try walk(top, [])
    }

    /// A recursive-descent reader of the selector's bytes.
    private struct Parser {
        let bytes: [UInt8]
        let text: String
        var index = 0
        var names = 0

        init(_ bytes: [UInt8], text: String) {
            self.bytes = bytes
            self.text = text
        }

        var atEnd: Bool {
            mutating get {
                skipSpaces()
                return index == bytes.count
            }
        }

        func invalid() -> StorageError {
            StorageError(.invalidArgument, "Invalid field selection \(text.prefix(200))")
        }

        /// `field (',' field)*`, up to a `)` or the end.
        mutating func selection(depth: Int) throws -> [String: Keep] {
            guard depth < FieldSelection.maxDepth else { throw invalid() }
            var members: [String: Keep] = [:]
            repeat {
                let (path, keep) = try field(depth: depth)
                Self.add(path[...], keep, to: &members)
            } while consume(UInt8(ascii: ","))
            return members
        }

        /// `name ('/' name)* ['(' selection ')']`.
        mutating func field(depth: Int) throws -> ([String], Keep) {
            var path = [try name()]
            while consume(UInt8(ascii: "/")) {
                path.append(try name())
                guard path.count + depth < FieldSelection.maxDepth else { throw invalid() }
            }
            guard consume(UInt8(ascii: "(")) else { return (path, .whole) }
            let inner = try selection(depth: depth + path.count)
            guard consume(UInt8(ascii: ")")) else { throw invalid() }
            return (path, .members(inner))
        }

        /// A member's name: anything but the selector's own punctuation (a metadata key may hold `-` or `.`); `*`
        /// stands alone. Spaces around a name are dropped (`items(name, size)`), spaces inside one are refused.
        mutating func name() throws -> String {
            skipSpaces()
            let start = index
            while index < bytes.count, !Self.punctuation.contains(bytes[index]) { index += 1 }
            guard index > start, let name = String(validating: bytes[start..<index], as: UTF8.self) else {
                throw invalid()
            }
            names += 1
            guard names <= FieldSelection.maxNames, name == "*" || !name.contains("*") else { throw invalid() }
            skipSpaces()
            return name
        }

        mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            skipSpaces()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        static let punctuation: Set<UInt8> = Set("/,() \t\r\n".utf8)

        /// Merges one path into a selection: what is kept whole stays whole.
        static func add(_ path: ArraySlice<String>, _ keep: Keep, to members: inout [String: Keep]) {
            guard let first = path.first else { return }
            let rest = path.dropFirst()
            var kept = keep
            if !rest.isEmpty {
                var inner: [String: Keep] = [:]
                add(rest, keep, to: &inner)
                kept = .members(inner)
            }
            members[first] = merge(members[first], kept)
        }

        static func merge(_ a: Keep?, _ b: Keep) -> Keep {
            switch (a, b) {
            case (nil, _): b
            case (.whole?, _), (_, .whole): .whole
            case (.members(let x)?, .members(let y)): .members(x.merging(y) { merge($0, $1) })
            }
        }
    }
}
