package import SiloCore

/// Where a multipart upload's records live among the upload sessions: the upload under its bucket (a bucket's
/// uploads are one id range), each part under its upload with a five-digit number (id order is part order).
package enum XMLMultipartIDs {
    package static func upload(_ bucket: BucketName, _ uploadID: String) -> String { uploadsPrefix(bucket) + uploadID }
    package static func uploadsPrefix(_ bucket: BucketName) -> String { "xml-mpu/\(bucket.rawValue)/" }
    package static func partsPrefix(_ uploadID: String) -> String { "xml-mpu-part/\(uploadID)/" }

    package static func part(_ uploadID: String, _ number: Int) -> String {
        let digits = String(number)
        return partsPrefix(uploadID) + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// The client-facing id of an upload record.
    package static func uploadID(of upload: UploadSession) -> String {
        String(upload.id.dropFirst(uploadsPrefix(upload.bucket).count))
    }

    /// The upload record a part record belongs to.
    static func upload(ofPart part: UploadSession) -> String? {
        let rest = part.id.dropFirst("xml-mpu-part/".count)
        guard part.id.hasPrefix("xml-mpu-part/"), let slash = rest.firstIndex(of: "/") else { return nil }
        return upload(part.bucket, String(rest[..<slash]))
    }

    /// Upload ids are what ``RandomID/sessionID()`` makes: 40 lowercase hex digits. Anything else names no upload.
    package static func isUploadID(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// Who a bucket's uploads count against (``ServerConfiguration/maxMultipartUploadsPerBucket``).
    package static func caller(_ bucket: BucketName) -> String { "xml-mpu:" + bucket.rawValue }
}

extension ObjectService {
    /// Every part of an XML multipart upload uploaded so far, by number (at most 10 000: ten pages of the store).
    package func multipartParts(of uploadID: String) throws -> [UploadSession] {
        var all: [UploadSession] = []
        while true {
            let page = try metadata.sessions(
                idPrefix: XMLMultipartIDs.partsPrefix(uploadID), after: all.last?.id, limit: 1000)
            all += page
            if page.count < 1000 { return all }
        }
    }

    /// Ends an upload in progress without an object (a client's abort, a lifecycle rule): the upload is cancelled,
    /// its parts and their blobs go. Throws 404 `NoSuchUpload` when it is no longer in progress.
    package func abortMultipartUpload(_ upload: UploadSession) throws {
        let uploadID = XMLMultipartIDs.uploadID(of: upload)
        _ = try metadata.updateSession(id: upload.id) { stored in
            guard stored.state == .active else { throw StorageError.noSuchUpload(uploadID) }
            stored.state = .cancelled
            stored.updated = Timestamp.now()
        }
        dropMultipartParts(try multipartParts(of: uploadID))
    }

    /// Forgets parts and deletes their blobs; what fails here is left to maintenance (the parts of an upload that is
    /// not active any more expire with it).
    package func dropMultipartParts(_ parts: [UploadSession]) {
        for part in parts {
            do {
                try metadata.deleteSession(id: part.id)
                discardBlobLater(part.blobID)
            } catch {
                logger.warning(
                    "part left to maintenance", metadata: ["silo.session": part.id, "silo.error": "\(error)"])
            }
        }
    }
}
