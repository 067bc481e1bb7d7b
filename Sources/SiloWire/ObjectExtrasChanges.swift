public import SiloCore

/// The GCS-only keys of an object metadata body: `storageClass`, `temporaryHold`, `eventBasedHold`,
/// `retention`, `contexts` and `acl`, checked for shape where they enter; ``apply(to:replacing:now:)`` merges them
/// (PATCH) or replaces them (PUT). What depends on the bucket (object retention enabled, UBLA, holds by default)
/// is decided by the GCS API layer, which owns the bucket resource.
public struct ObjectExtrasChanges: Sendable, Equatable {
    public enum Retention: Sendable, Equatable {
        case keep, remove
        case set(mode: String, until: Timestamp)
    }

    public enum Contexts: Sendable, Equatable {
        case keep, clear
        /// Per key: a value sets it, nil removes it.
        case merge([String: String?])
    }

    public var storageClass: String?
    /// nil keeps; JSON `null` releases the hold, as `false` does.
    public var temporaryHold: Bool?
    public var eventBasedHold: Bool?
    public var retention = Retention.keep
    public var contexts = Contexts.keep
    /// The new ACL, normalized to `[{"entity","role"}]`; nil keeps it.
    public var acl: [ACLEntry]?

    public static let storageClasses: Set<String> = [
        "STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE", "MULTI_REGIONAL", "REGIONAL", "DURABLE_REDUCED_AVAILABILITY",
    ]
    /// GCS's limits on object contexts: keys and values are short text.
    static let maxContexts = 50
    static let maxContextText = 256

    public init() {}

    public var isEmpty: Bool { self == ObjectExtrasChanges() }

    init(json object: JSONObject) throws {
        func bad(_ message: String) -> StorageError { StorageError(.invalidArgument, "Invalid argument: \(message)") }
        switch object["storageClass"] {
        case nil, .null?: break
        case .string(let value)?:
            guard Self.storageClasses.contains(value.uppercased()) else {
                throw bad("storageClass \(value.prefix(40)) is not a storage class")
            }
            storageClass = value.uppercased()
        default: throw bad("storageClass must be a string")
        }
        func hold(_ key: String) throws -> Bool? {
            switch object[key] {
            case nil: return nil
            case .null?: return false
            case .bool(let b)?: return b
            default: throw bad("\(key) must be a boolean")
            }
        }
        temporaryHold = try hold("temporaryHold")
        eventBasedHold = try hold("eventBasedHold")
        switch object["retention"] {
        case nil: break
        case .null?: retention = .remove
        case .object(let r)?:
            let mode = r["mode"]?.stringValue
            let until = r["retainUntilTime"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
            let absent: (JSONValue?) -> Bool = { $0 == nil || $0 == .null }
            if absent(r["mode"]) && absent(r["retainUntilTime"]) {
                retention = .remove
            } else {
                guard let mode, mode == "Locked" || mode == "Unlocked" else {
                    throw bad("retention.mode must be Locked or Unlocked")
                }
                guard let until else { throw bad("retention.retainUntilTime must be an RFC 3339 time") }
                retention = .set(mode: mode, until: until)
            }
        default: throw bad("retention must be an object or null")
        }
        switch object["contexts"] {
        case nil: break
        case .null?: contexts = .clear
        case .object(let c)?:
            switch c["custom"] {
            case nil, .null?: contexts = .clear
            case .object(let custom)?:
                guard custom.members.count <= Self.maxContexts else {
                    throw bad("at most \(Self.maxContexts) object contexts")
                }
                var changes: [String: String?] = [:]
                for (key, value) in custom.members {
                    guard !key.isEmpty, key.utf8.count <= Self.maxContextText, FieldText.isValid(key) else {
                        throw bad("object context key \(key.debugDescription.prefix(60))")
                    }
                    switch value {
                    case .null: changes[key] = .some(nil)
                    case .object(let entry) where entry["value"] == .null || entry["value"] == nil:
                        changes[key] = .some(nil)
                    case .object(let entry):
                        guard let text = entry["value"]?.stringValue, text.utf8.count <= Self.maxContextText,
                            FieldText.isValid(text)
                        else { throw bad("object context \(key.prefix(60)) needs a short string value") }
                        changes[key] = text
                    default: throw bad("object context \(key.prefix(60)) must be an object or null")
                    }
                }
                contexts = .merge(changes)
            default: throw bad("contexts.custom must be an object or null")
            }
        default: throw bad("contexts must be an object or null")
        }
        switch object["acl"] {
        case nil: break
        case .null?: acl = []
        case .array(let entries)?: acl = try entries.map { try ACLEntry(json: $0, bucket: false) }
        default: throw bad("acl must be a list")
        }
    }

    /// Merges (PATCH, inserts) or replaces (PUT) into `extras`. `now` stamps context create and update times.
    /// Retention is applied by the caller, which knows whether the bucket allows it.
    public func apply(to extras: inout ObjectExtras, replacing: Bool, now: Timestamp) throws {
        if let storageClass { extras.storageClass = storageClass }
        if replacing {
            // A replacement that leaves a hold out releases it; one never set stays unset.
            extras.temporaryHold = temporaryHold ?? extras.temporaryHold.map { _ in false }
            extras.eventBasedHold = eventBasedHold ?? extras.eventBasedHold
        } else {
            if let temporaryHold { extras.temporaryHold = temporaryHold }
            if let eventBasedHold { extras.eventBasedHold = eventBasedHold }
        }
        var current = ObjectContexts(json: extras.contexts)
        switch contexts {
        case .keep: if replacing { current.entries = [:] }
        case .clear: current.entries = [:]
        case .merge(let changes):
            if replacing { current.entries = current.entries.filter { changes[$0.key] != nil } }
            for (key, value) in changes {
                if let value {
                    let created = current.entries[key]?.created ?? now
                    current.entries[key] = ObjectContexts.Entry(value: value, created: created, updated: now)
                } else {
                    current.entries[key] = nil
                }
            }
        }
        extras.contexts = current.entries.isEmpty ? nil : current.json
        if let acl { extras.acl = ACLEntry.json(acl) }
    }
}

/// An object's contexts (`contexts.custom`), as stored in ``ObjectExtras/contexts``.
public struct ObjectContexts: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var value: String
        public var created: Timestamp
        public var updated: Timestamp
    }

    public var entries: [String: Entry] = [:]

    public init(json: String?) {
        guard let json, let custom = (try? JSONValue.parse(Array(json.utf8)))?.objectValue?["custom"]?.objectValue
        else { return }
        for (key, value) in custom.members {
            guard let entry = value.objectValue, let text = entry["value"]?.stringValue else { continue }
            let created =
                entry["createTime"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) ?? Timestamp(microseconds: 0)
            let updated = entry["updateTime"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) ?? created
            entries[key] = Entry(value: text, created: created, updated: updated)
        }
    }

    public var rendered: JSONValue {
        var custom = JSONObject()
        for key in entries.keys.sorted() {
            guard let entry = entries[key] else { continue }
            custom[key] = .object([
                "value": .string(entry.value), "createTime": .string(entry.created.rfc3339Precise),
                "updateTime": .string(entry.updated.rfc3339Precise),
            ])
        }
        return .object(["custom": .object(custom)])
    }

    var json: String { rendered.serializedString }

    /// `filter=` on objects.list: `contexts."KEY"="VALUE"`, `contexts."KEY":*`, each optionally negated with `-`.
    /// Returns nil for a filter this server does not understand.
    public static func filter(_ text: String) -> (@Sendable (ObjectContexts) -> Bool)? {
        var rest = Substring(Substring(text).trimmingSpaces())
        let negated = rest.first == "-"
        if negated { rest = rest.dropFirst() }
        guard rest.hasPrefix("contexts.\"") else { return nil }
        rest = rest.dropFirst("contexts.\"".count)
        guard let close = rest.firstIndex(of: "\"") else { return nil }
        let key = String(rest[..<close])
        rest = rest[rest.index(after: close)...]
        let test: @Sendable (ObjectContexts) -> Bool
        if rest == ":*" {
            test = { $0.entries[key] != nil }
        } else if rest.hasPrefix("=\""), rest.hasSuffix("\""), rest.count >= 3 {
            let value = String(rest.dropFirst(2).dropLast())
            test = { $0.entries[key]?.value == value }
        } else {
            return nil
        }
        return negated ? { !test($0) } : test
    }
}

/// One ACL entry (`{"entity": "allUsers", "role": "READER"}`): the entity and role checked as GCS checks them.
public struct ACLEntry: Sendable, Equatable {
    public var entity: String
    public var role: String

    public init(entity: String, role: String) {
        self.entity = entity
        self.role = role
    }

    public static let entityPrefixes = [
        "user-", "group-", "domain-", "project-owners-", "project-editors-", "project-viewers-",
    ]

    public init(json: JSONValue, bucket: Bool) throws {
        guard let object = json.objectValue, let entity = object["entity"]?.stringValue,
            let role = object["role"]?.stringValue
        else { throw StorageError(.invalidArgument, "Invalid argument: an ACL entry needs an entity and a role") }
        try self.init(entity: entity, role: role, bucket: bucket)
    }

    public init(entity: String, role: String, bucket: Bool) throws {
        let roles: Set<String> = bucket ? ["OWNER", "WRITER", "READER"] : ["OWNER", "READER"]
        guard roles.contains(role.uppercased()) else {
            throw StorageError(.invalidArgument, "Invalid argument: ACL role \(role.prefix(40))")
        }
        let known =
            entity == "allUsers" || entity == "allAuthenticatedUsers"
            || Self.entityPrefixes.contains { entity.hasPrefix($0) && entity.count > $0.count }
        guard known, entity.utf8.count <= 256, FieldText.isValid(entity) else {
            throw StorageError(.invalidArgument, "Invalid argument: ACL entity \(entity.prefix(80))")
        }
        self.entity = entity
        self.role = role.uppercased()
    }

    public static func parse(_ json: String?) -> [ACLEntry]? {
        guard let json, let items = (try? JSONValue.parse(Array(json.utf8)))?.arrayValue else { return nil }
        return items.compactMap {
            guard let o = $0.objectValue, let e = o["entity"]?.stringValue, let r = o["role"]?.stringValue else {
                return nil
            }
            return ACLEntry(entity: e, role: r)
        }
    }

    public static func json(_ entries: [ACLEntry]) -> String {
        JSONValue.array(entries.map { .object(["entity": .string($0.entity), "role": .string($0.role)]) })
            .serializedString
    }
}
