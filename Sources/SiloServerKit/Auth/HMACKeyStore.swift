import SiloAuth
package import SiloCore
import SiloWire

/// Where HMAC keys live: one metadata-store document, read and rewritten whole in one transaction (there are few,
/// and verifying a signature needs the secret as it was issued). The JSON API's `hmacKeys` resource edits it; the
/// signature verifier reads it (``StoredHMACKeyring``).
package enum HMACKeyStore {
    static let document = "hmacKeys"

    package enum State: String {
        case active = "ACTIVE"
        case inactive = "INACTIVE"
        case deleted = "DELETED"
    }

    package struct Key {
        package var accessID: String
        package var project: String
        package var email: String
        package var state: State
        package var secret: String
        package var created: Timestamp
        package var updated: Timestamp
        /// Changes with every update, so a client's read-modify-write can name the version it read.
        package var etag: String

        package init(
            accessID: String, project: String, email: String, state: State, secret: String, created: Timestamp,
            updated: Timestamp, etag: String
        ) {
            self.accessID = accessID
            self.project = project
            self.email = email
            self.state = state
            self.secret = secret
            self.created = created
            self.updated = updated
            self.etag = etag
        }
    }

    /// The keys as stored (any project).
    package static func load(_ store: any MetadataStore) throws -> [Key] {
        guard let text = try store.document(document) else { return [] }
        return try decode(text)
    }

    package static func change(_ store: any MetadataStore, _ body: (inout [Key]) throws -> Void) throws {
        try store.updateDocument(document) { text in
            var keys = try text.map(decode) ?? []
            try body(&keys)
            text = JSONValue.array(keys.map { .object(stored($0)) }).serializedString
        }
    }

    private static func stored(_ key: Key) -> JSONObject {
        [
            "accessId": .string(key.accessID), "projectId": .string(key.project),
            "serviceAccountEmail": .string(key.email), "state": .string(key.state.rawValue),
            "secret": .string(key.secret), "created": .number(key.created.microseconds),
            "updated": .number(key.updated.microseconds), "etag": .string(key.etag),
        ]
    }

    private static func decode(_ text: String) throws -> [Key] {
        guard case .array(let items) = try JSONValue.parse(text) else {
            throw StorageError(.corrupt, "the stored HMAC keys are not a JSON array")
        }
        return try items.map { item in
            guard let o = item.objectValue, let id = o["accessId"]?.stringValue,
                let project = o["projectId"]?.stringValue, let email = o["serviceAccountEmail"]?.stringValue,
                let state = o["state"]?.stringValue.flatMap(State.init(rawValue:)),
                let secret = o["secret"]?.stringValue, let created = o["created"]?.int64Value,
                let updated = o["updated"]?.int64Value, let etag = o["etag"]?.stringValue
            else { throw StorageError(.corrupt, "a stored HMAC key is malformed") }
            return Key(
                accessID: id, project: project, email: email, state: state, secret: secret,
                created: Timestamp(microseconds: created), updated: Timestamp(microseconds: updated), etag: etag)
        }
    }
}

/// The store's keys as the signature verifier looks them up: only active keys sign.
/// On an inline service (`attempt` set) the keys are not read: they are in the store, so the request goes to a worker.
struct StoredHMACKeyring: HMACKeyring {
    let store: any MetadataStore
    let attempt: InlineAttempt?

    package func hmacKey(accessID: String) throws(AuthError) -> HMACSigningKey? {
        do {
            if let attempt { throw attempt.wouldBlock("the HMAC keys") }
            return try HMACKeyStore.load(store).first { $0.accessID == accessID && $0.state == .active }.map {
                HMACSigningKey(email: $0.email, secret: $0.secret)
            }
        } catch {
            throw AuthError(.invalidConfiguration, "the HMAC keys cannot be read", cause: error)
        }
    }
}
