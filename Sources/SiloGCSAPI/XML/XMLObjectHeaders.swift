import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// How the XML API spells object metadata and conditions: as request and response headers (`x-goog-meta-*`,
/// `Content-Type`, `x-goog-if-generation-match`, …) where the JSON API has a metadata body and query parameters.
/// Everything is checked here, where it enters.
enum XMLObjectHeaders {

    /// Lowercase hex, as ETags spell an MD5.
    /// The fields of the object an upload makes (PUT, multipart initiate, resumable start): its metadata headers
    /// (``changes(_:)``), the canned ACL, and the keys it names — `x-goog-encryption-kms-key-name`, kept as the
    /// object's `kmsKeyName`, and a customer-supplied key, whose SHA-256 the object keeps (``CustomerEncryption``).
    package static func fields(_ context: RequestContext, service: ObjectService, bucket: BucketName, name: ObjectName)
        throws -> ObjectFields
    {
        let headers = context.headers
        var fields = try service.newObjectFields(
            try changes(headers), fallbackContentType: nil, bucket, name, predefinedACL: try predefinedACL(headers),
            principal: context.principal, time: context.time)
        if let key = headers["x-goog-encryption-kms-key-name"] {
            guard !key.isEmpty, key.utf8.count <= 1024, FieldText.isValid(key) else {
                throw StorageError(.invalidArgument, "x-goog-encryption-kms-key-name is not a key name")
            }
            fields.extras.kmsKeyName = key
        }
        fields.extras.customerKeySHA256 = try CustomerEncryption.keySHA256(headers)
        return fields
    }

    /// The metadata an upload (or a copy with `x-goog-metadata-directive: REPLACE`) gives the object, as the JSON
    /// API's metadata body would give it, so the same checks apply: header-safe text, custom metadata within 8 KiB,
    /// a known storage class, an RFC 3339 custom time.
    static func changes(_ headers: HTTPHeaders) throws -> MetadataChanges {
        var json = JSONObject()
        var custom = JSONObject()
        for field in headers {
            let name = field.name.lowercased()
            if name.hasPrefix("x-goog-meta-") {
                // The key as the client spelled it: HTTP/1.1 clients keep its case.
                let key = String(field.name.dropFirst(12))
                guard custom[key] == nil else {
                    throw StorageError(.invalidArgument, "x-goog-meta-\(key.prefix(100)) is given twice")
                }
                custom[key] = .string(field.value)
            } else if let key = Self.fieldHeaders[name], !field.value.isEmpty {
                json[key] = .string(field.value)
            }
        }
        if !custom.members.isEmpty { json["metadata"] = .object(custom) }
        return try MetadataChanges(json: .object(json))
    }

    /// Request headers that set an object field, by the JSON API's name of the field.
    private static let fieldHeaders: [String: String] = [
        "content-type": "contentType", "content-encoding": "contentEncoding",
        "content-disposition": "contentDisposition", "content-language": "contentLanguage",
        "cache-control": "cacheControl", "x-goog-storage-class": "storageClass", "x-goog-custom-time": "customTime",
    ]

    /// `x-goog-acl`: a canned ACL, as the JSON API's `predefinedAcl` names it (`public-read` is `publicRead`).
    static func predefinedACL(_ headers: HTTPHeaders) throws -> String? {
        guard let canned = headers["x-goog-acl"] else { return nil }
        guard let name = cannedACLs[canned.lowercased()] else {
            throw StorageError(
                .invalidArgument,
                "x-goog-acl \(canned.prefix(60)) is not a canned ACL for objects: "
                    + cannedACLs.keys.sorted().joined(separator: ", "))
        }
        return name
    }

    private static let cannedACLs = [
        "private": "private", "project-private": "projectPrivate", "public-read": "publicRead",
        "authenticated-read": "authenticatedRead", "bucket-owner-read": "bucketOwnerRead",
        "bucket-owner-full-control": "bucketOwnerFullControl",
    ]

    /// `x-goog-if-generation-match` (0: the object must not exist) and `x-goog-if-metageneration-match`; with
    /// `prefix` `x-goog-copy-source-` the conditions on a copy's source.
    static func conditions(_ headers: HTTPHeaders, prefix: String = "x-goog-") throws -> Preconditions {
        func value(_ name: String) throws -> Int64? {
            guard let text = headers[prefix + name] else { return nil }
            guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int64(text) else {
                throw StorageError(
                    .invalidArgument, "\(prefix)\(name) must be a non-negative integer, not \(text.prefix(40))")
            }
            return number
        }
        return Preconditions(
            ifGenerationMatch: try value("if-generation-match"),
            ifMetagenerationMatch: try value("if-metageneration-match"))
    }

    /// The checksums a client declares for an upload: `Content-MD5` and `x-goog-hash: crc32c=…,md5=…` (one header
    /// or several), base64 as GCS takes them. Malformed or contradicting values are `InvalidDigest`, before any byte
    /// is read.
    struct Digests: Equatable {
        var md5: String?
        var crc32c: String?

        init(_ headers: HTTPHeaders) throws {
            var md5s: [String] = []
            if let header = headers["Content-MD5"] { md5s.append(header.trimmingCharacters(in: " ")) }
            for header in headers.values("x-goog-hash") {
                for item in header.split(separator: ",") {
                    let pair = item.trimmingCharacters(in: " ")
                    guard let eq = pair.firstIndex(of: "=") else { throw Self.invalid("x-goog-hash \(pair)") }
                    let value = String(pair[pair.index(after: eq)...])
                    switch pair[..<eq].lowercased() {
                    case "md5": md5s.append(value)
                    case "crc32c":
                        guard crc32c == nil || crc32c == value else { throw Self.invalid("two CRC32C values") }
                        guard Base64.decode(value)?.count == 4 else { throw Self.invalid("crc32c \(value)") }
                        crc32c = value
                    default: continue  // other algorithms GCS may add are not ours to check
                    }
                }
            }
            for value in md5s {
                guard Base64.decode(value)?.count == 16 else { throw Self.invalid("MD5 \(value)") }
                guard md5 == nil || Base64.decode(md5!) == Base64.decode(value) else {
                    throw Self.invalid("two different MD5 values")
                }
                md5 = value
            }
        }

        private static func invalid(_ what: String) -> StorageError {
            StorageError(.invalidArgument, "The digest is not valid: \(what.prefix(80))")
        }
    }

    /// The headers of an answer that made `record`: its ETag, generation, metageneration, hashes and stored length
    /// (and component count, for a composed object).
    package static func written(_ record: ObjectRecord) -> HTTPHeaders {
        var headers = HTTPHeaders(minimumCapacity: 7)
        headers.add("ETag", XMLETag.of(record))
        headers.add("X-Goog-Generation", String(record.generation))
        headers.add("X-Goog-Metageneration", String(record.metageneration))
        headers.add("X-Goog-Hash", DownloadHeaders.hash(record.blob))
        headers.add("X-Goog-Stored-Content-Length", String(record.size))
        headers.add("X-Goog-Stored-Content-Encoding", record.fields.contentEncoding ?? "identity")
        if let count = record.componentCount { headers.add("X-Goog-Component-Count", String(count)) }
        return headers
    }
}
