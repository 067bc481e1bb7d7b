import SiloCore
import SiloWire

/// `request` and `resource` for one storage operation, built on first use so that a rule that never
/// mentions `resource` never pays for converting it.
final class StorageVariables {
    let access: AccessRequest
    let segments: [String]

    init(access: AccessRequest, segments: [String]) {
        self.access = access
        self.segments = segments
    }

    /// Whether the rules read `request` or `resource`: if not, the decision depended on the path alone.
    private(set) var wereRead = false
    private var resourceValue: RulesValue?
    private var requestValue: RulesValue?

    var resource: RulesValue {
        wereRead = true
        if let resourceValue { return resourceValue }
        let value = access.resource.map { .map(StorageVariables.objectMap($0)) } ?? RulesValue.null
        resourceValue = value
        return value
    }

    var request: RulesValue {
        wereRead = true
        if let requestValue { return requestValue }
        let value = makeRequest()
        requestValue = value
        return value
    }

    private func makeRequest() -> RulesValue {
        var r: [String: RulesValue] = [
            "path": .path(segments),
            "time": .timestamp(StorageVariables.time(access.time)),
            "resource": proposedResource,
            "params": .map([:]),
        ]
        r["auth"] = auth
        return .map(r)
    }

    /// `null` without a credential or without a user id; otherwise `{uid, token}` with every claim.
    private var auth: RulesValue {
        guard let principal = access.principal, let uid = principal.uid else { return .null }
        var token: [String: RulesValue] = [:]
        if let json = try? JSONValue.parse(principal.claimsJSON), case .object(let object) = json {
            for (k, v) in object.members { token[k] = StorageVariables.value(v) }
        }
        return .map(["uid": .string(uid), "token": .map(token)])
    }

    /// The object as it would be after the write; `null` for get, list and delete.
    private var proposedResource: RulesValue {
        switch access.operation {
        case .get, .list, .delete: return .null
        case .update:
            // Existing object merged with the patch: same bytes and generation, next metageneration.
            guard var record = access.resource else { return .null }
            if let fields = access.proposedFields { record.fields = fields }
            record.metageneration += 1
            record.updated = access.time
            var map = StorageVariables.objectMap(record)
            if let size = access.proposedSize { map["size"] = .int(size) }
            return .map(map)
        case .create:
            guard access.proposedFields != nil || access.proposedSize != nil else { return .null }
            // A new generation: md5Hash and crc32c come from the bytes received; generation and etag are those of
            // the request's time, which the store assigns unless another write took that microsecond.
            let fields = access.proposedFields ?? ObjectFields()
            let now = StorageVariables.time(access.time)
            var map = StorageVariables.fieldMap(fields)
            map["name"] = .string(access.path)
            map["bucket"] = .string(access.bucket.rawValue)
            map["size"] = access.proposedSize.map { .int($0) } ?? (access.bytesKnown ? .int(0) : Self.unknown("size"))
            if let blob = access.proposedBlob {
                map["md5Hash"] = .string(Base64.encode(blob.md5))
                map["crc32c"] = .string(StorageVariables.crc32cText(blob.crc32c))
            } else if !access.bytesKnown {
                map["md5Hash"] = Self.unknown("md5Hash")
                map["crc32c"] = Self.unknown("crc32c")
            }
            map["generation"] = .int(access.time.microseconds)
            map["metageneration"] = .int(1)
            // Before the bytes, the commit's time (and so its etag) is not known either.
            map["etag"] =
                access.bytesKnown
                ? .string(ObjectRecord.etag(generation: access.time.microseconds, metageneration: 1))
                : Self.unknown("etag")
            map["timeCreated"] = .timestamp(now)
            map["updated"] = .timestamp(now)
            return .map(map)
        }
    }

    /// A property of bytes that have not arrived yet (see `AccessRequest.bytesKnown`).
    private static func unknown(_ name: String) -> RulesValue {
        .error(RulesFault("request.resource.\(name) is not known before the upload's bytes arrive", undetermined: true))
    }

    static func time(_ t: Timestamp) -> TimeValue {
        let seconds = Time.floorDiv(t.microseconds, 1_000_000)
        return TimeValue(seconds: seconds, nanos: Int32((t.microseconds - seconds * 1_000_000) * 1000))
    }

    private static func optional(_ s: String?) -> RulesValue { s.map { .string($0) } ?? .null }

    static func fieldMap(_ f: ObjectFields) -> [String: RulesValue] {
        var metadata: [String: RulesValue] = [:]
        for (k, v) in f.customMetadata where k != ObjectFields.downloadTokensKey { metadata[k] = .string(v) }
        return [
            "contentType": optional(f.contentType),
            "contentDisposition": optional(f.contentDisposition),
            "contentEncoding": optional(f.contentEncoding),
            "contentLanguage": optional(f.contentLanguage),
            "metadata": .map(metadata),
        ]
    }

    /// The object metadata map rules see as `resource` / `request.resource`.
    static func objectMap(_ o: ObjectRecord) -> [String: RulesValue] {
        var map = fieldMap(o.fields)
        map["name"] = .string(o.name.rawValue)
        map["bucket"] = .string(o.bucket.rawValue)
        map["generation"] = .int(o.generation)
        map["metageneration"] = .int(o.metageneration)
        map["size"] = .int(o.size)
        map["timeCreated"] = .timestamp(time(o.timeCreated))
        map["updated"] = .timestamp(time(o.updated))
        map["md5Hash"] = .string(Base64.encode(o.blob.md5))
        map["crc32c"] = .string(crc32cText(o.blob.crc32c))
        map["etag"] = .string(o.etag)
        return map
    }

    /// GCS's form: base64 of the big-endian 4 bytes.
    static func crc32cText(_ c: UInt32) -> String {
        Checksums.crc32cBase64(c)
    }

    /// JSON claims to rules values: integral numbers become ints, others floats.
    static func value(_ json: JSONValue) -> RulesValue {
        switch json {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .number(let text): return Int64(text).map { .int($0) } ?? Double(text).map { .float($0) } ?? .null
        case .string(let s): return .string(s)
        case .array(let items): return .list(items.map(value))
        case .object(let o):
            var m: [String: RulesValue] = [:]
            for (k, v) in o.members { m[k] = value(v) }
            return .map(m)
        }
    }
}
