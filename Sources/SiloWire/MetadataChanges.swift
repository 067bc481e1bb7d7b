public import SiloCore

/// One writable string field in a metadata request: left alone, removed (JSON `null`), or set.
public enum FieldChange: Sendable, Equatable {
    case keep
    case remove
    case set(String)

    func apply(to value: inout String?) {
        switch self {
        case .keep: break
        case .remove: value = nil
        case .set(let s): value = s
        }
    }
}

/// The writable part of a metadata JSON body (upload metadata, PATCH), with null-deletes semantics:
/// an absent key keeps the field, `null` removes it, a value sets it. `metadata: null` removes all custom
/// metadata; `metadata: {k: null}` removes one key. Read-only keys (`bucket`, `name`, `size`, `generation`, …) are
/// ignored. The `firebaseStorageDownloadTokens` custom key replaces the download-token list instead of being stored
/// as custom metadata (that is how GCS-side tooling sets tokens, and production reads tokens from that key).
public struct MetadataChanges: Sendable, Equatable {
    public var contentType = FieldChange.keep
    public var contentEncoding = FieldChange.keep
    public var contentDisposition = FieldChange.keep
    public var contentLanguage = FieldChange.keep
    public var cacheControl = FieldChange.keep
    public var customTime = FieldChange.keep
    public var removeAllCustomMetadata = false
    /// Per-key changes applied after `removeAllCustomMetadata`; nil removes the key.
    public var customMetadata: [(key: String, value: String?)] = []
    /// nil = keep; [] = remove all tokens; otherwise the new list.
    public var downloadTokens: [String]?
    /// Client-supplied checksums (GCS JSON and optionally v0), for verification at upload.
    public var md5Hash: String?
    public var crc32c: String?
    /// The `name` key, when present (uploads take the object name from it when the URL has none).
    public var name: String?
    /// The GCS-only keys (storage class, holds, retention, contexts, ACL); the v0 API ignores them.
    public var extras = ObjectExtrasChanges()

    public init() {}

    public static func == (a: MetadataChanges, b: MetadataChanges) -> Bool {
        a.contentType == b.contentType && a.contentEncoding == b.contentEncoding
            && a.contentDisposition == b.contentDisposition && a.contentLanguage == b.contentLanguage
            && a.cacheControl == b.cacheControl && a.customTime == b.customTime
            && a.removeAllCustomMetadata == b.removeAllCustomMetadata
            && a.customMetadata.elementsEqual(b.customMetadata, by: { $0.key == $1.key && $0.value == $1.value })
            && a.downloadTokens == b.downloadTokens && a.md5Hash == b.md5Hash && a.crc32c == b.crc32c
            && a.name == b.name && a.extras == b.extras
    }

    /// Parses a metadata body. Throws `.invalidArgument` naming the offending key.
    public init(json: JSONValue) throws {
        guard case .object(let object) = json else {
            throw StorageError(.invalidArgument, "metadata must be a JSON object")
        }
        func field(_ key: String) throws -> FieldChange {
            switch object[key] {
            case nil: return .keep
            case .null?: return .remove
            case .string(let s)?:
                // These fields become download headers: refused here, where they enter.
                try FieldText.check(s, field: key)
                return .set(s)
            default: throw StorageError(.invalidArgument, "metadata field \(key) must be a string or null")
            }
        }
        contentType = try field("contentType")
        contentEncoding = try field("contentEncoding")
        contentDisposition = try field("contentDisposition")
        contentLanguage = try field("contentLanguage")
        cacheControl = try field("cacheControl")
        customTime = try field("customTime")
        if case .set(let t) = customTime, Timestamp(rfc3339: t) == nil {
            throw StorageError(.invalidArgument, "customTime must be an RFC 3339 timestamp: \(t.prefix(80))")
        }
        if case .string(let s)? = object["md5Hash"] { md5Hash = s }
        if case .string(let s)? = object["crc32c"] { crc32c = s }
        if case .string(let s)? = object["name"] { name = s }
        extras = try ObjectExtrasChanges(json: object)
        switch object["metadata"] {
        case nil: break
        case .null?: removeAllCustomMetadata = true
        case .object(let custom)?:
            for (key, value) in custom.members {
                let text: String?
                switch value {
                case .null: text = nil
                case .string(let s): text = s
                case .number(let n): text = n
                case .bool(let b): text = b ? "true" : "false"
                default: throw StorageError(.invalidArgument, "custom metadata value for \(key) must be a string")
                }
                guard !key.isEmpty, FieldText.isValid(key) else {
                    throw StorageError(
                        .invalidArgument,
                        "custom metadata key \(key.debugDescription.prefix(80)) is empty or has a control character")
                }
                if key == ObjectFields.downloadTokensKey {
                    downloadTokens = text.map(Self.splitTokens) ?? []
                } else {
                    customMetadata.append((key, text))
                }
            }
        default: throw StorageError(.invalidArgument, "metadata.metadata must be an object or null")
        }
    }

    public static func splitTokens(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
    }

    /// Applies the changes to `fields`, then checks the result (header-safe text, custom metadata within GCS's
    /// 8 KiB): a merge of small changes must not grow an object's metadata past the limit either. Throws
    /// `.invalidArgument` and leaves `fields` unchanged when the result is refused.
    public func apply(to fields: inout ObjectFields) throws {
        var result = fields
        merge(into: &result)
        try result.validate()
        fields = result
    }

    /// GCS lets a metadata update move `customTime` only forward: once set, an earlier time or its removal is
    /// refused (a new upload or a rewrite starts a new object, which may have any). Called with the version's fields
    /// before and after an update.
    public static func checkCustomTime(from old: ObjectFields, to new: ObjectFields, object: String) throws {
        guard let before = old.customTime else { return }
        guard let after = new.customTime else {
            throw StorageError(.invalidArgument, "The customTime of \(object) cannot be removed once set")
        }
        if after < before {
            throw StorageError(
                .invalidArgument,
                "The customTime of \(object) cannot be decreased: \(after.rfc3339Precise) is before "
                    + before.rfc3339Precise)
        }
    }

    private func merge(into fields: inout ObjectFields) {
        contentType.apply(to: &fields.contentType)
        contentEncoding.apply(to: &fields.contentEncoding)
        contentDisposition.apply(to: &fields.contentDisposition)
        contentLanguage.apply(to: &fields.contentLanguage)
        cacheControl.apply(to: &fields.cacheControl)
        switch customTime {
        case .keep: break
        case .remove: fields.customTime = nil
        case .set(let t): fields.customTime = Timestamp(rfc3339: t)
        }
        if removeAllCustomMetadata { fields.customMetadata = [:] }
        for (key, value) in customMetadata { fields.customMetadata[key] = value }
        if let downloadTokens { fields.downloadTokens = downloadTokens }
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        var s = self
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}
