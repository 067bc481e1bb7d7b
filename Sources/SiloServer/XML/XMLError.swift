import SiloCore
import SiloHTTP
import SiloWire

extension Reply {
    /// GCS's XML API error shape: `<Error><Code>…</Code><Message>…</Message><Details>…</Details></Error>`.
    static func xmlError(_ error: any Error, headers: HTTPHeaders = [:]) -> HTTPResponse {
        let storage = StorageError.wrap(error)
        let status = HTTPStatus.of(storage.code)
        if status == 304 { return empty(304, headers: headers) }
        return failing(storage, status: status, headers: headers) { message, headers in
            var headers = headers
            headers.set("Content-Type", "application/xml; charset=UTF-8")
            // Refusals of signed URLs and by IAM carry GCS's own code, message and details (XMLErrorDetail.swift).
            let detail = status < 500 ? XMLErrorDetail.of(storage) : nil
            let body =
                "<?xml version='1.0' encoding='UTF-8'?><Error><Code>\(detail?.code ?? XMLErrorCode.of(storage))</Code>"
                + "<Message>\(XMLText.escape(detail?.message ?? message))</Message>\(detail?.elements ?? "")</Error>"
            return HTTPResponse(status: status, headers: headers, body: .bytes(Array(body.utf8)))
        }
    }
}

/// The `<Code>` GCS's XML API answers for each kind of failure.
enum XMLErrorCode {
    static func of(_ error: StorageError) -> String {
        switch error.code {
        case .invalidArgument: "InvalidArgument"
        case .unauthenticated: "AuthenticationRequired"
        case .permissionDenied: "AccessDenied"
        case .notFound: "NoSuchKey"
        case .alreadyExists, .conflict: "Conflict"
        case .preconditionFailed: "PreconditionFailed"
        case .payloadTooLarge: "EntityTooLarge"
        case .rangeNotSatisfiable: "InvalidRange"
        case .unimplemented: "NotImplemented"
        case .tooManyRequests: "SlowDown"
        case .unavailable: "ServiceUnavailable"
        default: "InternalError"
        }
    }
}
