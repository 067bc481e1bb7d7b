package import SiloCore

/// A GCS XML API error code more specific than its status's usual one (`NoSuchUpload`, `InvalidPart`,
/// `BadDigest`, …), carried as the cause of the ``StorageError`` a handler throws; ``XMLErrorCode/of(_:)`` answers
/// with it.
package struct XMLErrorName: Error, Sendable, CustomStringConvertible {
    let code: String
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
            .notFound, XMLErrorCode.noSuchUpload,
            "The requested upload \(id.prefix(64)) was not found; it may have completed, been aborted or expired.")
    }
}

/// The codes of the multipart upload API's refusals.
extension XMLErrorCode {
    static let noSuchUpload = "NoSuchUpload"
    package static let invalidPart = "InvalidPart"
    package static let invalidPartOrder = "InvalidPartOrder"
    package static let entityTooSmall = "EntityTooSmall"
    package static let malformedXML = "MalformedXML"
}
