import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// The XML documents of the multipart upload API: the answers, in the S3-compatible namespace GCS uses (clients
/// look elements up in it: google-cloud-storage finds `UploadId` only there), and the `CompleteMultipartUpload`
/// request.
enum XMLMultipartBodies {
    static let namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

    /// A 200 (or `status`) answer with the document `<root xmlns=…>inner</root>`.
    static func response(_ root: String, _ inner: String, status: Int = 200, headers: HTTPHeaders = [:])
        -> HTTPResponse
    {
        var headers = headers
        headers.set("Content-Type", "application/xml; charset=UTF-8")
        let text = "<?xml version='1.0' encoding='UTF-8'?><\(root) xmlns=\"\(namespace)\">\(inner)</\(root)>"
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(text.utf8)))
    }

    /// `<name>escaped text</name>`.
    static func element(_ name: String, _ text: String) -> String {
        "<\(name)>\(XMLText.escape(text))</\(name)>"
    }

    static func initiated(_ bucket: BucketName, _ name: ObjectName, uploadID: String) -> HTTPResponse {
        response(
            "InitiateMultipartUploadResult",
            element("Bucket", bucket.rawValue) + element("Key", name.rawValue) + element("UploadId", uploadID))
    }

    package static func completed(location: String, _ record: ObjectRecord) -> HTTPResponse {
        response(
            "CompleteMultipartUploadResult",
            element("Location", location) + element("Bucket", record.bucket.rawValue)
                + element("Key", record.name.rawValue) + element("ETag", XMLETag.of(record)),
            headers: XMLObjectHeaders.written(record))
    }

    /// One `<Part>` of a ListPartsResult.
    static func listedPart(_ part: UploadSession) -> String {
        "<Part>" + element("PartNumber", String(part.part?.number ?? 0))
            + element("LastModified", part.updated.rfc3339) + element("ETag", etag(part))
            + element("Size", String(part.received)) + "</Part>"
    }

    /// A part's ETag: its MD5's hex, quoted, as GCS gives it (and as clients send it back at completion).
    static func etag(_ part: UploadSession) -> String { "\"\(Base16.encode(part.part?.md5 ?? []))\"" }

    /// Whether an ETag a client sent back names `part`: quotes and case do not matter.
    static func etag(_ sent: String, matches part: UploadSession) -> Bool {
        var text = sent.trimmingXMLWhitespace()
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        return equalsIgnoringCase(text, Base16.encode(part.part?.md5 ?? []))
    }

    /// The parts a `CompleteMultipartUpload` document lists, in its order. Throws 400 `MalformedXML` for a document
    /// that is not one, has no part, or a part without a number or an ETag.
    package static func completeRequest(_ body: [UInt8]) throws -> [(number: Int, etag: String)] {
        let text = Substring(decoding: body, as: UTF8.self)
        func malformed(_ why: String) -> StorageError {
            .xml(
                .invalidArgument, XMLErrorCode.malformedXML,
                "The XML you provided was not well-formed or did not validate against the CompleteMultipartUpload "
                    + "schema: \(why)")
        }
        guard text.contains("<CompleteMultipartUpload") else { throw malformed("no CompleteMultipartUpload element") }
        var parts: [(number: Int, etag: String)] = []
        for part in XMLText.elements("Part", in: text) {
            guard let numberText = XMLText.value("PartNumber", in: part),
                let number = Int(numberText.trimmingXMLWhitespace())
            else { throw malformed("a Part without a PartNumber") }
            guard let etag = XMLText.value("ETag", in: part) else { throw malformed("part \(number) has no ETag") }
            parts.append((number, etag))
        }
        guard !parts.isEmpty else { throw malformed("no Part") }
        return parts
    }
}

extension StringProtocol {
    /// Without the spaces, tabs and line ends XML allows around a value.
    fileprivate func trimmingXMLWhitespace() -> String {
        var view = Substring(self)
        while let first = view.utf8.first, [0x20, 0x09, 0x0D, 0x0A].contains(first) { view = view.dropFirst() }
        while let last = view.utf8.last, [0x20, 0x09, 0x0D, 0x0A].contains(last) { view = view.dropLast() }
        return String(view)
    }
}
