import Foundation
import SiloCurl
import SiloS3Signer
import SiloWire

/// S3's multipart upload calls as the store uses them: a writer's segments larger than one part, and server-side
/// copies of segments (UploadPartCopy) when a blob is composed.
extension S3BlobStore {
    /// CreateMultipartUpload of `key`; returns the upload id.
    func startMultipartUpload(_ key: String) throws(S3Error) -> String {
        let reply = try client.send(
            S3Operation(
                method: "POST", key: key, query: [SigV4QueryItem("uploads")],
                summary: "start multipart upload of \(key)"))
        guard let uploadID = XMLText.value("UploadId", in: Substring(decoding: reply.body, as: UTF8.self)) else {
            throw S3Error(.invalidResponse, "start multipart upload of \(key): no UploadId in the reply")
        }
        return uploadID
    }

    /// CompleteMultipartUpload of the parts `etags` (part numbers 1, 2, …). Its reply's ETag is not used (Ceph sends
    /// it empty); a 200 can still carry an `<Error>` body, which counts as failure. A retried completion whose first
    /// attempt succeeded (its reply lost) finds the upload gone because the object exists: accepted only if the
    /// object has exactly `size` bytes.
    func completeMultipartUpload(_ key: String, uploadID: String, etags: [String], size: Int64) throws(S3Error) {
        let parts = etags.enumerated().map { index, etag in
            "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(XMLText.escape(etag))</ETag></Part>"
        }
        let body = Data(("<CompleteMultipartUpload>" + parts.joined() + "</CompleteMultipartUpload>").utf8)
        let reply: CurlBufferedResponse
        do {
            reply = try client.send(
                S3Operation(
                    method: "POST", key: key, query: [SigV4QueryItem("uploadId", uploadID)],
                    headers: [SigV4Header("Content-Type", "application/xml")], body: body,
                    summary: "complete multipart upload of \(key)"))
        } catch  where error.s3Code == "NoSuchUpload" {
            let head = try client.send(
                S3Operation(method: "HEAD", key: key, summary: "check completed upload of \(key)"))
            guard head.head.header("Content-Length").flatMap({ Int64($0) }) == size else { throw error }
            return
        }
        try Self.refuseErrorBody(reply, "complete multipart upload of \(key)")
    }

    /// Best effort: AbortMultipartUpload, so the parts of an upload that will never complete do not linger.
    func abortMultipartUpload(_ key: String, uploadID: String) {
        _ = try? client.send(
            S3Operation(
                method: "DELETE", key: key, query: [SigV4QueryItem("uploadId", uploadID)],
                summary: "abort multipart upload of \(key)"))
    }

    /// Some stores answer 200 and put the failure in the body (CompleteMultipartUpload, CopyObject).
    static func refuseErrorBody(_ reply: CurlBufferedResponse, _ summary: String) throws(S3Error) {
        let xml = Substring(decoding: reply.body, as: UTF8.self)
        if !XMLText.elements("Error", in: xml).isEmpty {
            throw S3Client.failure(status: 500, body: reply.body, summary)
        }
    }
}
