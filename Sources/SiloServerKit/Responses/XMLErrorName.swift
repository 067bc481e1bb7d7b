package import SiloCore

/// A GCS XML API error code more specific than its status's usual one (`NoSuchUpload`, `InvalidPart`,
/// `BadDigest`, …), carried as the cause of the ``StorageError`` a handler throws, which the XML API answers with (SiloGCSAPI's
/// `XMLErrorCode.of`). In the kit because shared code refuses with one (an upload no longer in progress).
package struct XMLErrorName: Error, Sendable, CustomStringConvertible {
    package let code: String
    package var description: String { code }
}

extension StorageError {
    /// A StorageError that the XML API reports with the `<Code>` `name`.
    package static func xml(_ code: StorageError.Code, _ name: String, _ message: String) -> StorageError {
        StorageError(code, message, cause: XMLErrorName(code: name))
    }

    /// GCS's answer for an upload id that names no upload in progress of this object.
    package static func noSuchUpload(_ id: String) -> StorageError {
        .xml(
            .notFound, "NoSuchUpload",
            "The requested upload \(id.prefix(64)) was not found; it may have completed, been aborted or expired.")
    }
}
