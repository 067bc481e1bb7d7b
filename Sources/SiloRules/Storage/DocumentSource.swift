/// Where `firestore.get` and `firestore.exists` read documents. Without one, both evaluate to ⊥, so
/// any rule that depends on them denies.
public protocol DocumentSource: Sendable {
    /// The document's fields at `path` (segments such as `databases`, `(default)`, `documents`, `users`, `alice`),
    /// nil when it does not exist. Throwing means the backend failed; the call then evaluates to ⊥.
    func document(at path: [String]) throws -> [String: RulesValue]?
}

/// Per-request cache and limit for cross-service reads: each distinct document counts once.
final class DocumentCache {
    private let source: (any DocumentSource)?
    private var cache: [[String]: [String: RulesValue]?] = [:]

    /// Whether the rules asked for a document (the decision then depends on more than the path).
    private(set) var wereUsed = false

    init(source: (any DocumentSource)?) { self.source = source }

    func call(exists: Bool, path: [String], at: Int, _ interp: Interpreter) -> RulesValue {
        wereUsed = true
        guard let source else {
            return .error(RulesFault("firestore is not available: no document source is configured", offset: at))
        }
        guard path.count >= 5, path[0] == "databases", path[2] == "documents", (path.count - 3) % 2 == 0 else {
            return .error(RulesFault("not a document path: /\(path.joined(separator: "/"))", offset: at))
        }
        let fields: [String: RulesValue]?
        if let cached = cache[path] {
            fields = cached
        } else {
            guard cache.count < Limits.maxDocumentReads else {
                interp.abort("more than \(Limits.maxDocumentReads) firestore documents read")
                return .error(RulesFault("firestore read limit exceeded", offset: at))
            }
            do {
                fields = try source.document(at: path)
            } catch {
                return .error(RulesFault("firestore read failed: \(error)", offset: at))
            }
            cache[path] = .some(fields)
        }
        if exists { return .bool(fields != nil) }
        guard let fields else { return .null }
        return .map(["data": .map(fields), "id": .string(path.last!), "__name__": .path(path)])
    }
}
