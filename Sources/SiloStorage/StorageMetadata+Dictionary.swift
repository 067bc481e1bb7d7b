import Foundation
internal import SiloCore
internal import SiloWire
import Synchronization

extension StorageMetadata.Fields {
    /// From a dictionary in the JSON object shape (values may be Foundation or Swift types).
    init(dictionary: [String: AnyHashable]) {
        var object = JSONObject()
        for key in dictionary.keys.sorted() {
            if let value = Self.jsonValue(dictionary[key]!.base) { object[key] = value }
        }
        self.init(json: object)
    }

    private static func jsonValue(_ value: Any) -> JSONValue? {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return .null }
            return jsonValue(wrapped)
        }
        switch value {
        case let s as String: return .string(s)
        case let b as Bool: return .bool(b)
        case let i as Int: return .number(i)
        case let i as Int64: return .number(i)
        case let n as NSNumber: return .number(n.stringValue)
        case let d as Date: return .string(StorageMetadata.rfc3339(d))
        case is NSNull: return .null
        case let map as [String: String]:
            var o = JSONObject()
            for k in map.keys.sorted() { o[k] = .string(map[k]!) }
            return .object(o)
        case let map as [String: AnyHashable]:
            var o = JSONObject()
            for k in map.keys.sorted() { o[k] = jsonValue(map[k]!.base) ?? .null }
            return .object(o)
        default: return nil
        }
    }

    /// From a v0 metadata JSON object. String fields are taken only when they are strings; numbers may be JSON
    /// numbers or decimal strings (otherwise 0); custom metadata only when every value is a string (as Firebase).
    init(json o: JSONObject) {
        bucket = o["bucket"]?.stringValue ?? ""
        cacheControl = o["cacheControl"]?.stringValue
        contentDisposition = o["contentDisposition"]?.stringValue
        contentEncoding = o["contentEncoding"]?.stringValue
        contentLanguage = o["contentLanguage"]?.stringValue
        contentType = o["contentType"]?.stringValue
        md5Hash = o["md5Hash"]?.stringValue
        generation = o["generation"]?.int64Value ?? 0
        metageneration = o["metageneration"]?.int64Value ?? 0
        size = o["size"]?.int64Value ?? 0
        path = o["name"]?.stringValue
        timeCreated = o["timeCreated"]?.stringValue.flatMap(StorageMetadata.date(rfc3339:))
        updated = o["updated"]?.stringValue.flatMap(StorageMetadata.date(rfc3339:))
        downloadTokens = o["downloadTokens"]?.stringValue
        if let custom = o["metadata"]?.objectValue {
            var map: [String: String] = [:]
            var allStrings = true
            for (k, v) in custom.members {
                if let s = v.stringValue { map[k] = s } else { allStrings = false }
            }
            customMetadata = allStrings ? map : nil
        }
    }
}

extension StorageMetadata {
    static func date(rfc3339 text: String) -> Date? {
        Timestamp(rfc3339: text).map { Date(timeIntervalSince1970: Double($0.microseconds) / 1e6) }
    }

    static func rfc3339(_ date: Date) -> String {
        Timestamp(microseconds: Int64((date.timeIntervalSince1970 * 1e6).rounded())).rfc3339
    }

    /// Metadata parsed from a server response body (`isFile` true). Non-JSON → `unknown` "Invalid data…".
    static func fromServer(_ body: Data) throws(StorageError) -> StorageMetadata {
        guard let value = try? JSONValue.parse(body), let object = value.objectValue else {
            throw .unknown(
                message: "Invalid data returned from the server: \(String(decoding: body, as: UTF8.self))",
                serverError: [:])
        }
        var fields = Fields(json: object)
        fields.isFile = true
        return StorageMetadata(fields: fields)
    }

    /// The Firebase dictionary shape: `bucket` always; string fields when set; `size` as Int64 and `generation`,
    /// `metageneration` as decimal strings when non-zero; dates as RFC 3339 with milliseconds; `name` = full path;
    /// `metadata` always present (nil when there is no custom metadata).
    public func dictionaryRepresentation() -> [String: AnyHashable] {
        let f = fields
        var d: [String: AnyHashable] = ["bucket": f.bucket]
        let strings: [(String, String?)] = [
            ("cacheControl", f.cacheControl), ("contentDisposition", f.contentDisposition),
            ("contentEncoding", f.contentEncoding), ("contentLanguage", f.contentLanguage),
            ("contentType", f.contentType), ("md5Hash", f.md5Hash), ("name", f.path),
        ]
        for (k, v) in strings { if let v { d[k] = v } }
        if f.size != 0 { d["size"] = f.size }
        if f.generation != 0 { d["generation"] = String(f.generation) }
        if f.metageneration != 0 { d["metageneration"] = String(f.metageneration) }
        if let t = f.timeCreated { d["timeCreated"] = StorageMetadata.rfc3339(t) }
        if let t = f.updated { d["updated"] = StorageMetadata.rfc3339(t) }
        if let custom = f.customMetadata {
            d["metadata"] = custom
        } else {
            d["metadata"] = AnyHashable(f.customMetadata)
        }
        return d
    }

    static var writableStringKeys: [(String, WritableKeyPath<Fields, String?>)] {
        [
            ("cacheControl", \.cacheControl), ("contentDisposition", \.contentDisposition),
            ("contentEncoding", \.contentEncoding), ("contentLanguage", \.contentLanguage),
            ("contentType", \.contentType),
        ]
    }

    /// The resumable-upload start body: the object name and every writable field that is set.
    func uploadJSON() -> JSONValue {
        let f = fields
        var o = JSONObject()
        if let path = f.path { o["name"] = .string(path) }
        for (key, keyPath) in StorageMetadata.writableStringKeys {
            if let v = f[keyPath: keyPath] { o[key] = .string(v) }
        }
        if let custom = f.customMetadata {
            var m = JSONObject()
            for k in custom.keys.sorted() { m[k] = .string(custom[k]!) }
            o["metadata"] = .object(m)
        }
        return .object(o)
    }

    /// The PATCH body: what changed since the metadata was made (null deletes), plus fields the caller explicitly set
    /// to nil. Unlike Firebase, untouched fields of a fresh `StorageMetadata()` are not sent, so they are kept.
    func updateJSON() -> JSONValue {
        let s = state.withLock { $0 }
        var o = JSONObject()
        for (key, keyPath) in StorageMetadata.writableStringKeys {
            let now = s.fields[keyPath: keyPath]
            if now != s.baseline[keyPath: keyPath] || (now == nil && s.assigned.contains(key)) {
                o[key] = now.map { .string($0) } ?? .null
            }
        }
        let now = s.fields.customMetadata
        let before = s.baseline.customMetadata
        if now == nil {
            if before != nil || s.assigned.contains("metadata") { o["metadata"] = .null }
        } else if let now {
            var diff = JSONObject()
            for k in now.keys.sorted() where before?[k] != now[k] { diff[k] = .string(now[k]!) }
            for k in (before ?? [:]).keys.sorted() where now[k] == nil { diff[k] = .null }
            if !diff.members.isEmpty { o["metadata"] = .object(diff) }
        }
        return .object(o)
    }
}
