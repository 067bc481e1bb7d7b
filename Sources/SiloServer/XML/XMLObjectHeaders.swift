import SiloCore
import SiloHTTP
import SiloWire

/// The object metadata an XML API write carries in its request headers (multipart initiate, resumable start), the
/// preconditions it names there, and the headers that describe the object a write made.
enum XMLObjectHeaders {
    /// The fields of a new object of `bucket`: the content headers (Content-Type defaults to
    /// `application/octet-stream`), `x-goog-meta-*`, `x-goog-custom-time`, `x-goog-storage-class`, the canned
    /// `x-goog-acl`, `x-goog-encryption-kms-key-name` and a customer-supplied key's SHA-256. Each is checked here.
    static func fields(_ context: RequestContext, service: ObjectService, bucket: BucketName, name: ObjectName) throws
        -> ObjectFields
    {
        let headers = context.headers
        var fields = ObjectFields()
        fields.contentType = headers["Content-Type"].flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
        fields.contentEncoding = headers["Content-Encoding"]
        fields.contentDisposition = headers["Content-Disposition"]
        fields.contentLanguage = headers["Content-Language"]
        fields.cacheControl = headers["Cache-Control"]
        if let text = headers["x-goog-custom-time"] {
            guard let time = Timestamp(rfc3339: text) else {
                throw StorageError(.invalidArgument, "x-goog-custom-time \(text.prefix(40)) is not an RFC 3339 time")
            }
            fields.customTime = time
        }
        for field in headers where field.name.utf8.count > metaPrefix.utf8.count {
            guard equalsIgnoringCase(field.name.prefix(metaPrefix.count), metaPrefix) else { continue }
            let key = String(field.name.dropFirst(metaPrefix.count))
            if key == ObjectFields.downloadTokensKey {
                fields.downloadTokens = MetadataChanges.splitTokens(field.value)
            } else {
                fields.customMetadata[key] = field.value
            }
        }
        var extras = ObjectExtrasChanges()
        if let storageClass = headers["x-goog-storage-class"] {
            guard ObjectExtrasChanges.storageClasses.contains(storageClass.uppercased()) else {
                throw StorageError(
                    .invalidArgument, "x-goog-storage-class \(storageClass.prefix(40)) is not a storage class")
            }
            extras.storageClass = storageClass.uppercased()
        }
        let resource = try service.bucketResource(bucket)
        try ObjectResource.apply(
            extras, to: &fields, existing: nil, bucket: resource, query: context.query, principal: context.principal,
            replacing: false, now: context.time, object: "\(bucket)/\(name)")
        if let canned = headers["x-goog-acl"] {
            fields.extras.acl = ACLEntry.json(
                try ObjectResource.predefined(try predefinedACL(canned), owner: ObjectResource.owner(context.principal))
            )
        }
        if let key = headers["x-goog-encryption-kms-key-name"] {
            guard !key.isEmpty, key.utf8.count <= 1024, FieldText.isValid(key) else {
                throw StorageError(.invalidArgument, "x-goog-encryption-kms-key-name is not a key name")
            }
            fields.extras.kmsKeyName = key
        }
        fields.extras.customerKeySHA256 = try CustomerEncryption.keySHA256(headers)
        try fields.validate()
        return fields
    }

    /// `x-goog-if-generation-match` (0: the object must not exist) and `x-goog-if-metageneration-match`.
    static func conditions(_ headers: HTTPHeaders) throws -> Preconditions {
        func value(_ name: String) throws -> Int64? {
            guard let text = headers[name] else { return nil }
            guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int64(text) else {
                throw StorageError(.invalidArgument, "\(name) must be a non-negative integer, not \(text.prefix(40))")
            }
            return number
        }
        return Preconditions(
            ifGenerationMatch: try value("x-goog-if-generation-match"),
            ifMetagenerationMatch: try value("x-goog-if-metageneration-match"))
    }

    /// What an answer about an object a write just made carries: its ETag (the MD5's hex, quoted; a composed object,
    /// which has no MD5, the JSON API's etag, quoted — GCS's are likewise not MD5-based), generation,
    /// metageneration, hashes, stored length and encoding, and component count.
    static func written(_ record: ObjectRecord) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add("ETag", etag(record))
        headers.add("x-goog-generation", String(record.generation))
        headers.add("x-goog-metageneration", String(record.metageneration))
        let md5 = record.blob.md5.isEmpty ? "" : ",md5=\(Base64.encode(record.blob.md5))"
        headers.add("x-goog-hash", "crc32c=\(Checksums.crc32cBase64(record.blob.crc32c))\(md5)")
        headers.add("x-goog-stored-content-length", String(record.size))
        headers.add("x-goog-stored-content-encoding", record.fields.contentEncoding ?? "identity")
        if let count = record.componentCount { headers.add("x-goog-component-count", String(count)) }
        return headers
    }

    static func etag(_ record: ObjectRecord) -> String {
        record.blob.md5.isEmpty ? "\"\(record.etag)\"" : "\"\(hex(record.blob.md5))\""
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The JSON API's `predefinedAcl` for a canned `x-goog-acl`.
    static func predefinedACL(_ canned: String) throws -> String {
        switch canned.lowercased() {
        case "private": "private"
        case "project-private": "projectPrivate"
        case "public-read": "publicRead"
        case "authenticated-read": "authenticatedRead"
        case "bucket-owner-read": "bucketOwnerRead"
        case "bucket-owner-full-control": "bucketOwnerFullControl"
        default: throw StorageError(.invalidArgument, "x-goog-acl \(canned.prefix(40)) is not a canned ACL for objects")
        }
    }

    private static let metaPrefix = "x-goog-meta-"
}
