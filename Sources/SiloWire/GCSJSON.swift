public import SiloCore

/// The GCS JSON API shapes: `storage#object`, `storage#bucket`, lists and errors.
public enum GCSJSON {
    /// `base` is `scheme://host` as the client addressed the server, so links work from where the client is.
    /// `extra`: what the server adds from the bucket (ACL, owner, retention expiry, soft-delete times).
    public static func object(_ record: ObjectRecord, base: String, extra: JSONObject = JSONObject()) -> JSONValue {
        let bucket = PercentCoding.encodeComponent(record.bucket.rawValue)
        let name = PercentCoding.encodeComponent(record.name.rawValue)
        var o = JSONObject()
        o["kind"] = .string("storage#object")
        o["id"] = .string("\(record.bucket.rawValue)/\(record.name.rawValue)/\(record.generation)")
        o["selfLink"] = .string("\(base)/storage/v1/b/\(bucket)/o/\(name)")
        o["mediaLink"] = .string(
            "\(base)/download/storage/v1/b/\(bucket)/o/\(name)?generation=\(record.generation)&alt=media")
        o["name"] = .string(record.name.rawValue)
        o["bucket"] = .string(record.bucket.rawValue)
        o["generation"] = .string(String(record.generation))
        o["metageneration"] = .string(String(record.metageneration))
        // GCS leaves contentType out when an object has none (compose without one, for instance).
        if let v = record.fields.contentType { o["contentType"] = .string(v) }
        let extras = record.fields.extras
        o["storageClass"] = .string(extras.storageClass ?? "STANDARD")
        o["size"] = .string(String(record.size))
        if record.componentCount == nil { o["md5Hash"] = .string(Base64.encode(record.blob.md5)) }
        o["crc32c"] = .string(Checksums.crc32cBase64(record.blob.crc32c))
        o["etag"] = .string(record.etag)
        o["timeCreated"] = .string(record.timeCreated.rfc3339)
        o["updated"] = .string(record.updated.rfc3339)
        o["timeStorageClassUpdated"] = .string(record.timeCreated.rfc3339)
        if let v = record.fields.contentEncoding { o["contentEncoding"] = .string(v) }
        if let v = record.fields.contentDisposition { o["contentDisposition"] = .string(v) }
        if let v = record.fields.contentLanguage { o["contentLanguage"] = .string(v) }
        if let v = record.fields.cacheControl { o["cacheControl"] = .string(v) }
        if let v = record.fields.customTime { o["customTime"] = .string(v.rfc3339Precise) }
        var custom = record.fields.customMetadata
        if !record.fields.downloadTokens.isEmpty {
            custom[ObjectFields.downloadTokensKey] = record.fields.downloadTokens.joined(separator: ",")
        }
        if !custom.isEmpty { o["metadata"] = .object(FirebaseMetadata.stringMap(custom)) }
        if let count = record.componentCount { o["componentCount"] = .number(count) }
        if let held = extras.temporaryHold { o["temporaryHold"] = .bool(held) }
        if let held = extras.eventBasedHold { o["eventBasedHold"] = .bool(held) }
        if let mode = extras.retentionMode, let until = extras.retainUntil {
            o["retention"] = .object(["mode": .string(mode), "retainUntilTime": .string(until.rfc3339Precise)])
        }
        if extras.contexts != nil { o["contexts"] = ObjectContexts(json: extras.contexts).rendered }
        if let key = extras.kmsKeyName { o["kmsKeyName"] = .string(key) }
        if let sha256 = extras.customerKeySHA256 {
            o["customerEncryption"] = .object(["encryptionAlgorithm": .string("AES256"), "keySha256": .string(sha256)])
        }
        for (key, value) in extra.members { o[key] = value }
        return .object(o)
    }

    /// `extra`: the rest of the resource (the server's `BucketResource`), after the common fields.
    public static func bucket(_ record: BucketRecord, base: String, extra: JSONObject = JSONObject()) -> JSONValue {
        var o = JSONObject()
        o["kind"] = .string("storage#bucket")
        o["id"] = .string(record.name.rawValue)
        o["selfLink"] = .string("\(base)/storage/v1/b/\(PercentCoding.encodeComponent(record.name.rawValue))")
        o["projectNumber"] = .string("000000000000")
        o["name"] = .string(record.name.rawValue)
        o["timeCreated"] = .string(record.timeCreated.rfc3339)
        o["updated"] = .string(record.updated.rfc3339)
        o["metageneration"] = .string(String(record.metageneration))
        o["location"] = .string("US")
        o["locationType"] = .string("multi-region")
        o["storageClass"] = .string("STANDARD")
        o["etag"] = .string(Base64.encode(Array("\(record.name.rawValue)/\(record.metageneration)".utf8)))
        o["generation"] = .string(String(record.generation))
        for (key, value) in extra.members { o[key] = value }
        return .object(o)
    }

    /// `{"error":{"code":N,"message":M,"errors":[{"message":M,"domain":"global","reason":R}]}}`; `reason` is the
    /// status's usual one unless a refusal has its own (a bad parameter's `invalidParameter`).
    public static func error(status: Int, message: String, reason: String? = nil) -> JSONValue {
        let detail: JSONObject = [
            "message": .string(message), "domain": .string("global"), "reason": .string(reason ?? Self.reason(status)),
        ]
        return .object([
            "error": .object([
                "code": .number(status), "message": .string(message), "errors": .array([.object(detail)]),
            ])
        ])
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 304: "notModified"
        case 400: "invalid"
        case 401: "required"
        case 403: "forbidden"
        case 404: "notFound"
        case 409: "conflict"
        case 412: "conditionNotMet"
        case 413: "uploadTooLarge"
        case 416: "requestedRangeNotSatisfiable"
        case 501: "notImplemented"
        case 503: "backendError"
        default: "backendError"
        }
    }
}
