public import SiloCore

/// The Firebase Storage v0 metadata object: numbers as strings, three-digit-millisecond UTC
/// timestamps, `contentEncoding` always present, absent fields omitted rather than null.
public enum FirebaseMetadata {
    public static func json(_ record: ObjectRecord) -> JSONValue {
        // Appended in order: the keys are distinct, so the subscript setter's search for the key is not needed.
        var o = JSONObject()
        o.members.reserveCapacity(18)
        o.members.append(("name", .string(record.name.rawValue)))
        o.members.append(("bucket", .string(record.bucket.rawValue)))
        o.members.append(("generation", .string(String(record.generation))))
        o.members.append(("metageneration", .string(String(record.metageneration))))
        if let v = record.fields.contentType { o.members.append(("contentType", .string(v))) }
        o.members.append(("timeCreated", .string(record.timeCreated.rfc3339)))
        o.members.append(("updated", .string(record.updated.rfc3339)))
        o.members.append(("storageClass", .string("STANDARD")))
        o.members.append(("size", .string(String(record.size))))
        // Composed objects have no MD5 (as in GCS).
        if !record.blob.md5.isEmpty { o.members.append(("md5Hash", .string(Base64.encode(record.blob.md5)))) }
        o.members.append(("contentEncoding", .string(record.fields.contentEncoding ?? "identity")))
        if let v = record.fields.contentDisposition { o.members.append(("contentDisposition", .string(v))) }
        if let v = record.fields.contentLanguage { o.members.append(("contentLanguage", .string(v))) }
        if let v = record.fields.cacheControl { o.members.append(("cacheControl", .string(v))) }
        o.members.append(("crc32c", .string(Checksums.crc32cBase64(record.blob.crc32c))))
        o.members.append(("etag", .string(record.etag)))
        if !record.fields.downloadTokens.isEmpty {
            o.members.append(("downloadTokens", .string(record.fields.downloadTokens.joined(separator: ","))))
        }
        if !record.fields.customMetadata.isEmpty {
            o.members.append(("metadata", .object(stringMap(record.fields.customMetadata))))
        }
        return .object(o)
    }

    /// List response: `prefixes` and `items` always present; items carry only `name` and `bucket`.
    public static func listJSON(bucket: BucketName, prefixes: [String], items: [String], nextPageToken: String?)
        -> JSONValue
    {
        var o = JSONObject()
        o["prefixes"] = .array(prefixes.map { .string($0) })
        o["items"] = .array(items.map { .object(["name": .string($0), "bucket": .string(bucket.rawValue)]) })
        if let nextPageToken { o["nextPageToken"] = .string(nextPageToken) }
        return .object(o)
    }

    /// `{"error":{"code":N,"message":"..."}}`.
    public static func errorJSON(status: Int, message: String) -> JSONValue {
        .object(["error": .object(["code": .number(status), "message": .string(message)])])
    }

    static func stringMap(_ map: [String: String]) -> JSONObject {
        var o = JSONObject()
        o.members.reserveCapacity(map.count)
        // Dictionary keys are distinct: append in sorted order.
        for key in map.keys.sorted() { o.members.append((key, .string(map[key]!))) }
        return o
    }
}

public enum Checksums {
    /// Base64 of the big-endian 4-byte CRC32C, as GCS shows it (`AAAAAA==` for empty data).
    public static func crc32cBase64(_ value: UInt32) -> String {
        Base64.encode([
            UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF),
        ])
    }

    public static func crc32c(fromBase64 text: String) -> UInt32? {
        guard let b = Base64.decode(text), b.count == 4 else { return nil }
        return UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
    }
}
