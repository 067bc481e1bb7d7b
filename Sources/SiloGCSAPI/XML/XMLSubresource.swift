package import SiloCore
import SiloHTTP
import SiloServerKit

/// A sub-resource the XML API names with a bare query key on a bucket or an object (`GET /b?acl`, `PUT /b/o?acl`).
/// It is recognised when the request is routed, before anything else reads the query: a key GCS defines — or S3,
/// whose clients reach GCS through its interoperability — must never fall through to the object's bytes or the
/// bucket's listing.
package enum XMLSubresource: Equatable, Sendable {
    /// Served from the bucket and object resources the JSON API keeps (XMLAccessControl.swift,
    /// XMLBucketConfiguration.swift).
    case acl, defaultObjectAcl, location, versioning, lifecycle, cors, storageClass, billing
    /// Served for reading, because gsutil's bucket listing in XML mode (`ls -L -b`) reads every one of them.
    case logging, website, encryption, tagging
    /// Defined by GCS or S3, not served here: 501 `NotImplemented`.
    case unserved(String)

    init?(key: String) {
        switch key {
        case "acl": self = .acl
        case "defaultObjectAcl": self = .defaultObjectAcl
        case "location": self = .location
        case "versioning": self = .versioning
        case "lifecycle": self = .lifecycle
        case "cors": self = .cors
        case "storageClass": self = .storageClass
        case "billing": self = .billing
        case "logging": self = .logging
        // boto names them `websiteConfig` and `encryptionConfig`.
        case "website", "websiteConfig": self = .website
        case "encryption", "encryptionConfig": self = .encryption
        case "tagging": self = .tagging
        case _ where Self.unservedKeys.contains(key): self = .unserved(key)
        default: return nil
        }
    }

    /// The query key, as the client sent it.
    package var key: String {
        switch self {
        case .acl: "acl"
        case .defaultObjectAcl: "defaultObjectAcl"
        case .location: "location"
        case .versioning: "versioning"
        case .lifecycle: "lifecycle"
        case .cors: "cors"
        case .storageClass: "storageClass"
        case .billing: "billing"
        case .logging: "logging"
        case .website: "website"
        case .encryption: "encryption"
        case .tagging: "tagging"
        case .unserved(let key): key
        }
    }

    /// GCS's other XML sub-resources, then S3's, which S3 clients send to GCS's interoperable endpoint. `uploads`,
    /// `uploadId` and `upload_id` are not here: they are the multipart and resumable uploads (SiloGCSAPI's `XMLRoutes`).
    static let unservedKeys: Set<String> = [
        "retention", "legalHold", "iam", "policy", "policyStatus", "notification", "replication", "requestPayment",
        "accelerate", "analytics",
        "inventory", "metrics", "intelligent-tiering", "object-lock", "legal-hold", "ownershipControls",
        "publicAccessBlock", "torrent", "restore", "select", "attributes", "delete",
    ]

    /// The first query key that names a sub-resource.
    static func named(in query: QueryParameters) -> XMLSubresource? {
        for item in query.items {
            if let found = XMLSubresource(key: item.name) { return found }
        }
        return nil
    }
}

/// The XML API's copy header, which access reads to find the object a copy reads.
package enum XMLCopySource {
    /// `x-goog-copy-source`: `/{bucket}/{object}` percent-encoded, the bucket too (Rust's object_store encodes the
    /// whole path and leaves out the leading `/`, so that is accepted as well).
    package static func copySource(_ header: String) throws -> (BucketName, ObjectName) {
        let invalid = StorageError(
            .invalidArgument, "x-goog-copy-source must be /bucket/object, not \(header.prefix(200))")
        var text = Substring(header.trimmingCharacters(in: " "))
        if text.hasPrefix("/") { text = text.dropFirst() }
        guard let slash = text.firstIndex(of: "/"),
            let bucket = PercentCoding.decodePathComponent(text[..<slash]),
            let object = PercentCoding.decodePathComponent(text[text.index(after: slash)...])
        else { throw invalid }
        do { return (try BucketName(bucket), try ObjectName(object)) } catch { throw invalid }
    }
}
