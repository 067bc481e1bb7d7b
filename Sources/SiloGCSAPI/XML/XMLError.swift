package import SiloCore
package import SiloHTTP
import SiloServerKit
import SiloWire

extension Reply {
    /// GCS's XML API error shape: `<Error><Code>…</Code><Message>…</Message></Error>`. `code` names the failure
    /// where the error's kind alone does not (``XMLErrorCode``: a missing bucket, a digest that does not match);
    /// a server-side failure is always `InternalError`.
    package static func xmlError(_ error: any Error, code: String? = nil, headers: HTTPHeaders = [:]) -> HTTPResponse {
        let storage = StorageError.wrap(error)
        let status = HTTPStatus.of(storage.code)
        if status == 304 { return empty(304, headers: headers) }
        let name = status >= 500 ? XMLErrorCode.of(storage) : code ?? XMLErrorCode.of(storage)
        return failing(storage, status: status, headers: headers) { message, headers in
            var headers = headers
            headers.set("Content-Type", "application/xml; charset=UTF-8")
            // Refusals of signed URLs and by IAM carry GCS's own code, message and details (XMLErrorDetail.swift).
            let detail = status < 500 ? XMLErrorDetail.of(storage) : nil
            let body =
                "<?xml version='1.0' encoding='UTF-8'?><Error><Code>\(detail?.code ?? name)</Code>"
                + "<Message>\(XMLText.escape(detail?.message ?? message))</Message>\(detail?.elements ?? "")</Error>"
            return HTTPResponse(status: status, headers: headers, body: .bytes(Array(body.utf8)))
        }
    }
}

/// The `<Code>` GCS's XML API answers for each kind of failure.
package enum XMLErrorCode {
    package static let noSuchBucket = "NoSuchBucket"
    static let noSuchKey = "NoSuchKey"
    /// `Content-MD5` or `x-goog-hash` did not match the bytes received.
    package static let badDigest = "BadDigest"
    /// `Content-MD5` or `x-goog-hash` is no digest at all.
    package static let invalidDigest = "InvalidDigest"
    package static let bucketNotEmpty = "BucketNotEmpty"
    package static let bucketAlreadyOwnedByYou = "BucketAlreadyOwnedByYou"

    package static func of(_ error: StorageError) -> String {
        if let named = error.cause as? XMLErrorName { return named.code }
        return switch error.code {
        case .invalidArgument: "InvalidArgument"
        case .unauthenticated: "AuthenticationRequired"
        case .permissionDenied: "AccessDenied"
        case .notFound: noSuchKey
        case .alreadyExists, .conflict: "Conflict"
        case .preconditionFailed: "PreconditionFailed"
        case .payloadTooLarge: "EntityTooLarge"
        case .rangeNotSatisfiable: "InvalidRange"
        case .unimplemented: "NotImplemented"
        case .methodNotAllowed: "MethodNotAllowed"
        case .tooManyRequests: "SlowDown"
        case .unavailable: "ServiceUnavailable"
        default: "InternalError"
        }
    }
}

/// The codes of the multipart upload API's refusals.
extension XMLErrorCode {
    package static let invalidPart = "InvalidPart"
    package static let invalidPartOrder = "InvalidPartOrder"
    package static let entityTooSmall = "EntityTooSmall"
    package static let malformedXML = "MalformedXML"
}
