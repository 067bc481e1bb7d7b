/// Text that ends up in an HTTP response header: `contentType`, `contentDisposition`, `cacheControl`,
/// `contentLanguage`, `contentEncoding`, custom metadata keys. A CR or LF there would let one user's metadata
/// split the responses other users download, so such text is refused where it enters.
public enum FieldText {
    /// Longest value accepted for one header-bound field (GCS documents no smaller bound; the whole response head
    /// must stay well under the transport's head limit).
    public static let maxBytes = 8 * 1024

    /// RFC 9110 §5.5 field-value characters: visible ASCII, space, horizontal tab and any non-ASCII byte (UTF-8 is
    /// passed through as obs-text); never CR, LF, NUL, another control character or DEL.
    public static func isValid(_ text: some StringProtocol) -> Bool {
        text.withUTF8Bytes { $0.allSatisfy { $0 >= 0x20 ? $0 != 0x7F : $0 == 0x09 } }
    }

    /// Throws `.invalidArgument`, naming `field`, unless `text` is a valid field value of at most ``maxBytes``.
    public static func check(_ text: String, field: String) throws {
        guard isValid(text) else {
            throw StorageError(
                .invalidArgument, "metadata field \(field) contains a control character (CR, LF, NUL or another)")
        }
        let count = text.utf8.count
        guard count <= maxBytes else {
            throw StorageError(
                .invalidArgument, "metadata field \(field) is \(count) bytes; the limit is \(maxBytes)")
        }
    }
}

extension ObjectFields {
    /// GCS's limit on the custom metadata of one object: keys and values together, in UTF-8 bytes. The download
    /// tokens count too: GCS stores them as the `firebaseStorageDownloadTokens` custom key.
    public static let maxCustomMetadataBytes = 8 * 1024

    /// Bytes of custom metadata as GCS counts them (keys plus values, tokens as their comma-separated key value).
    public var customMetadataBytes: Int {
        var total = customMetadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        if !downloadTokens.isEmpty {
            total += Self.downloadTokensKey.utf8.count
            total += downloadTokens.reduce(downloadTokens.count - 1) { $0 + $1.utf8.count }
        }
        return total
    }

    /// Throws `.invalidArgument` when a header-bound field is not valid header text or the custom metadata is over
    /// GCS's 8 KiB. Every write of client-supplied metadata passes through here before it is stored.
    public func validate() throws {
        let headerBound: [(String, String?)] = [
            ("contentType", contentType), ("contentEncoding", contentEncoding),
            ("contentDisposition", contentDisposition), ("contentLanguage", contentLanguage),
            ("cacheControl", cacheControl),
        ]
        for case (let name, let value?) in headerBound { try FieldText.check(value, field: name) }
        for key in customMetadata.keys where !FieldText.isValid(key) || key.isEmpty {
            throw StorageError(
                .invalidArgument,
                "custom metadata key \(key.debugDescription.prefix(80)) is empty or has a control character")
        }
        let bytes = customMetadataBytes
        guard bytes <= Self.maxCustomMetadataBytes else {
            throw StorageError(
                .invalidArgument,
                "custom metadata is \(bytes) bytes (keys and values); the limit is \(Self.maxCustomMetadataBytes)")
        }
    }
}
