import Foundation

extension StorageError {
    /// Firebase's placeholder object name for errors about a reference without an object.
    static let noObjectPlaceholder = "<object-entity-internal-error>"

    /// Maps an HTTP status to Firebase's error, keyed on the status alone. The payload is what
    /// Firebase builds from gtm-session-fetcher's error: the body as `data` (and as text in `ResponseBody`),
    /// `ResponseErrorDomain` `com.google.HTTPStatus`, `ResponseErrorCode` the status, `bucket`, `object`, and under
    /// `NSUnderlyingErrorKey` the HTTP error itself (that domain, the status as its code, the body as `data`).
    static func http(status: Int, body: Data, bucket: String, object: String?) -> StorageError {
        let underlying = NSError(
            domain: "com.google.HTTPStatus", code: status, userInfo: body.isEmpty ? nil : ["data": body])
        var info: [String: any Sendable] = [
            "ResponseErrorDomain": "com.google.HTTPStatus",
            "ResponseErrorCode": status,
            "bucket": bucket,
            NSUnderlyingErrorKey: underlying,
        ]
        if let object, !object.isEmpty { info["object"] = object }
        if !body.isEmpty {
            info["data"] = body
            info["ResponseBody"] = String(decoding: body, as: UTF8.self)
        }
        let objectName = (object?.isEmpty ?? true) ? noObjectPlaceholder : object!
        switch status {
        case 400: return .unknown(message: "Unknown 400 error from backend", serverError: info)
        case 401: return .unauthenticated(serverError: info)
        case 402: return .quotaExceeded(bucket: bucket, serverError: info)
        case 403: return .unauthorized(bucket: bucket, object: objectName, serverError: info)
        case 404: return .objectNotFound(object: objectName, serverError: info)
        default: return .unknown(message: "Unexpected \(status) code from backend", serverError: info)
        }
    }

    /// Wraps a transport or file error. POSIX errors keep their errno in the message as Firebase does; the payload
    /// names the error's domain and code (`ResponseErrorDomain`, `ResponseErrorCode`) and holds it as an `NSError`
    /// under `NSUnderlyingErrorKey`, as Firebase does for gtm-session-fetcher's errors.
    static func transport(_ error: any Error, bucket: String, object: String?) -> StorageError {
        if let storage = error as? StorageError { return storage }
        if error is CancellationError { return .cancelled }
        let ns = error as NSError
        var info: [String: any Sendable] = [
            "bucket": bucket, NSUnderlyingErrorKey: ns, "ResponseErrorDomain": ns.domain, "ResponseErrorCode": ns.code,
        ]
        if let object, !object.isEmpty { info["object"] = object }
        if ns.domain == NSPOSIXErrorDomain {
            return .unknown(message: "POSIX errno \(ns.code) (\(ns.localizedDescription))", serverError: info)
        }
        return .unknown(message: "Unexpected \(ns.code) code from backend", serverError: info)
    }

    /// Anything the caller's `await` was interrupted by becomes `.cancelled`.
    static func wrap(_ error: any Error, bucket: String, object: String?) -> StorageError {
        transport(error, bucket: bucket, object: object)
    }
}
