import SiloAuth
import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// HMAC keys (`/projects/{p}/hmacKeys[/{accessId}]`: create, list, get, update, delete), GCS's credentials for
/// `GOOG4-HMAC-SHA256` signatures. All of them live in one metadata-store document (``HMACKeyStore/document``), read
/// and rewritten whole in one transaction: there are few (``maxPerAccount`` per service account, ``maxKeys`` in all)
/// and the secret must be kept as it is, since verifying a signature needs it.
struct HMACKeys {
    let service: ObjectService

    /// GCS's limit: keys (active or inactive) per service account.
    static let maxPerAccount = 10
    /// Keys kept in all, deleted ones included; the oldest deleted go first to make room.
    static let maxKeys = 1_000
    static let maxPageSize = 1_000

    package func handle(_ context: RequestContext, project: String, accessID: String?) -> RequestDisposition {
        switch (context.method, accessID) {
        case ("POST", nil): return .respond(run { try create(context, project) })
        case ("GET", nil): return .respond(run { try list(context, project) })
        case ("GET", .some(let id)):
            return .respond(
                run {
                    let found = try key(project, id)
                    return Reply.json(200, .object(Self.metadata(found)))
                })
        case ("PUT", .some(let id)):
            return GCSBody.json(service, context) { body in try update(context, project, id, body) }
        case ("DELETE", .some(let id)): return .respond(run { try delete(context, project, id) })
        default:
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on HMAC keys")))
        }
    }

    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    // MARK: Operations

    private func create(_ context: RequestContext, _ project: String) throws -> HTTPResponse {
        guard let email = context.query["serviceAccountEmail"], !email.isEmpty else {
            throw StorageError(.invalidArgument, "Required parameter: serviceAccountEmail")
        }
        guard Self.isEmail(email) else {
            throw StorageError(.invalidArgument, "Invalid argument: serviceAccountEmail \(email.prefix(100))")
        }
        let key = HMACKeyStore.Key(
            accessID: Self.newAccessID(), project: project, email: email, state: .active,
            secret: Base64.encode(Self.randomBytes(30)), created: context.time, updated: context.time,
            etag: Self.newETag())
        try HMACKeyStore.change(service.metadata) { keys in
            let held = keys.filter { $0.email == email && $0.state != .deleted }.count
            guard held < Self.maxPerAccount else {
                throw StorageError(
                    .invalidArgument, "\(email) already has \(Self.maxPerAccount) HMAC keys; delete one first")
            }
            if keys.count >= Self.maxKeys, let oldest = keys.firstIndex(where: { $0.state == .deleted }) {
                keys.remove(at: oldest)
            }
            guard keys.count < Self.maxKeys else {
                throw StorageError(.tooManyRequests, "this server holds its limit of \(Self.maxKeys) HMAC keys")
            }
            keys.append(key)
        }
        return Reply.json(
            200,
            .object([
                "kind": .string("storage#hmacKey"), "metadata": .object(Self.metadata(key)),
                "secret": .string(key.secret),
            ]))
    }

    private func list(_ context: RequestContext, _ project: String) throws -> HTTPResponse {
        let email = context.query["serviceAccountEmail"]
        // google-cloud-storage sends Python's `True`.
        let showDeleted = context.query["showDeletedKeys"]?.lowercased() == "true"
        var size = Self.maxPageSize
        if let text = context.query["maxResults"] {
            guard let value = Int(text), value > 0 else {
                throw StorageError(.invalidArgument, "Invalid argument: maxResults \(text.prefix(20))")
            }
            size = min(value, Self.maxPageSize)
        }
        let after = context.query["pageToken"] ?? ""
        let matching = try HMACKeyStore.load(service.metadata).filter {
            $0.project == project && (email == nil || $0.email == email) && (showDeleted || $0.state != .deleted)
                && $0.accessID > after
        }.sorted { $0.accessID < $1.accessID }
        var out: JSONObject = ["kind": .string("storage#hmacKeysMetadata")]
        let page = matching.prefix(size)
        if !page.isEmpty { out["items"] = .array(page.map { .object(Self.metadata($0)) }) }
        if matching.count > size, let last = page.last { out["nextPageToken"] = .string(last.accessID) }
        return Reply.json(200, .object(out))
    }

    private func update(_ context: RequestContext, _ project: String, _ id: String, _ body: JSONObject) throws
        -> HTTPResponse
    {
        guard let text = body["state"]?.stringValue, let state = HMACKeyStore.State(rawValue: text), state != .deleted
        else {
            throw StorageError(.invalidArgument, "Invalid argument: state must be ACTIVE or INACTIVE")
        }
        let etag = body["etag"]?.stringValue
        var result: HMACKeyStore.Key?
        try HMACKeyStore.change(service.metadata) { keys in
            guard let index = keys.firstIndex(where: { $0.accessID == id && $0.project == project }) else {
                throw Self.missing(id)
            }
            if let etag, etag != keys[index].etag {
                throw StorageError(.preconditionFailed, "the HMAC key \(id) has changed since etag \(etag)")
            }
            // GCS answers a deleted key's update as it does an unknown key's (clients clean up by catching 404).
            guard keys[index].state != .deleted else { throw Self.missing(id) }
            if keys[index].state != state {
                keys[index].state = state
                keys[index].updated = context.time
                keys[index].etag = Self.newETag()
            }
            result = keys[index]
        }
        guard let result else { throw StorageError(.internalError, "the HMAC key \(id) vanished while updated") }
        return Reply.json(200, .object(Self.metadata(result)))
    }

    private func delete(_ context: RequestContext, _ project: String, _ id: String) throws -> HTTPResponse {
        try HMACKeyStore.change(service.metadata) { keys in
            guard let index = keys.firstIndex(where: { $0.accessID == id && $0.project == project }),
                keys[index].state != .deleted
            else { throw Self.missing(id) }
            guard keys[index].state == .inactive else {
                throw StorageError(
                    .invalidArgument, "the HMAC key \(id) is ACTIVE; only an INACTIVE key can be deleted")
            }
            keys[index].state = .deleted
            keys[index].updated = context.time
            keys[index].etag = Self.newETag()
            // Deleted keys are listed (showDeletedKeys) but no longer sign: the secret goes.
            keys[index].secret = ""
        }
        return Reply.empty(204)
    }

    private func key(_ project: String, _ id: String) throws -> HMACKeyStore.Key {
        guard
            let key = try HMACKeyStore.load(service.metadata).first(where: {
                $0.accessID == id && $0.project == project
            })
        else { throw Self.missing(id) }
        return key
    }

    static func missing(_ id: String) -> StorageError { StorageError(.notFound, "No such HMAC key: \(id)") }

    // MARK: Shapes

    package static func metadata(_ key: HMACKeyStore.Key) -> JSONObject {
        [
            "kind": .string("storage#hmacKeyMetadata"), "id": .string("\(key.project)/\(key.accessID)"),
            "selfLink": .string("/storage/v1/projects/\(key.project)/hmacKeys/\(key.accessID)"),
            "accessId": .string(key.accessID), "projectId": .string(key.project),
            "serviceAccountEmail": .string(key.email), "state": .string(key.state.rawValue),
            "timeCreated": .string(key.created.rfc3339), "updated": .string(key.updated.rfc3339),
            "etag": .string(key.etag),
        ]
    }

    private static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return text.utf8.count <= 254 && parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
            && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// `GOOG1E` and 55 random letters and digits, the shape of GCS's access ids (about 280 random bits).
    private static func newAccessID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        let tail = (0..<55).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] }
        return "GOOG1E" + String(decoding: tail, as: UTF8.self)
    }

    private static func newETag() -> String { Base64.encode(randomBytes(9)) }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
