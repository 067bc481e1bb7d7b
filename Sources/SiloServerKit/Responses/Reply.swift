package import SiloCore
package import SiloHTTP
package import SiloWire

/// Builders for the responses every route sends, so status, content type and CORS headers are set in one place.
package enum Reply {
    package static func json(_ status: Int, _ value: JSONValue, headers extra: HTTPHeaders = [:]) -> HTTPResponse {
        var headers = extra
        headers.set("Content-Type", "application/json; charset=utf-8")
        return HTTPResponse(status: status, headers: headers, body: .bytes(value.serialized()))
    }

    /// JSON already serialized (a cached metadata document).
    package static func json(_ status: Int, serialized: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: jsonHeaders, body: .bytes(serialized))
    }

    private static let jsonHeaders: HTTPHeaders = {
        var headers: HTTPHeaders = ["Content-Type": "application/json; charset=utf-8"]
        ContentIsolation.add(to: &headers)
        return headers.preformatted()
    }()

    package static func empty(_ status: Int, headers: HTTPHeaders = [:]) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: .empty)
    }

    package static func text(_ status: Int, _ text: String, headers extra: HTTPHeaders = [:]) -> HTTPResponse {
        var headers = extra
        headers.set("Content-Type", "text/plain; charset=utf-8")
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(text.utf8)))
    }

    /// The v0 error shape `{"error":{"code":N,"message":"..."}}`.
    package static func firebaseError(_ error: StorageError, headers: HTTPHeaders = [:]) -> HTTPResponse {
        let status = HTTPStatus.of(error.code)
        return failing(error, status: status, headers: headers) { message, headers in
            json(status, FirebaseMetadata.errorJSON(status: status, message: message), headers: headers)
        }
    }

    /// Renders an error answer. A server-side failure (5xx) is never described to the client — store messages can
    /// name files, SQL and hosts — but gets a request id, in the message and in `X-Request-Id`, and carries the
    /// error for ``SiloServerApp`` to log once with its whole cause chain under that id.
    package static func failing(
        _ error: StorageError, status: Int, headers: HTTPHeaders,
        render: (_ message: String, _ headers: HTTPHeaders) -> HTTPResponse
    ) -> HTTPResponse {
        // 501 says what is not served; it is no failure of the server's to hide or log.
        guard status >= 500 && status != 501 else { return render(error.message, headers) }
        let id = RequestIdentity.current ?? RandomID.requestID()
        var headers = headers
        headers.set("X-Request-Id", id)
        var response = render("\(ServerFailure.summary(status)) (request id \(id))", headers)
        response.failure = ServerFailure(requestID: id, error: error)
        return response
    }

    package static func firebaseError(_ error: any Error, headers: HTTPHeaders = [:]) -> HTTPResponse {
        firebaseError(StorageError.wrap(error), headers: headers)
    }
}

package enum HTTPStatus {
    package static func of(_ code: StorageError.Code) -> Int {
        switch code {
        case .invalidArgument: 400
        case .unauthenticated: 401
        case .permissionDenied: 403
        case .notFound: 404
        case .alreadyExists, .conflict: 409
        case .preconditionFailed: 412
        case .payloadTooLarge: 413
        case .rangeNotSatisfiable: 416
        case .notModified: 304
        case .unavailable: 503
        case .insufficientStorage: 507
        case .tooManyRequests: 429
        case .unimplemented: 501
        case .methodNotAllowed: 405
        case .cancelled: 499
        default: 500
        }
    }
}

extension StorageError {
    /// Any error as a StorageError; unknown errors become internal errors that keep the original as the cause.
    package static func wrap(_ error: any Error) -> StorageError {
        if let storage = error as? StorageError { return storage }
        if let parse = error as? JSONParseError { return StorageError(.invalidArgument, "\(parse)", cause: parse) }
        return StorageError(.internalError, "internal error", cause: SendableDescription(String(describing: error)))
    }
}

struct SendableDescription: Error, Sendable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}

extension Reply {
    /// The GCS JSON API error shape, with `errors[0].reason`.
    package static func gcsError(_ error: any Error, headers: HTTPHeaders = [:]) -> HTTPResponse {
        let storage = StorageError.wrap(error)
        let status = HTTPStatus.of(storage.code)
        if status == 304 { return empty(304, headers: headers) }
        return failing(storage, status: status, headers: headers) { message, headers in
            json(status, GCSJSON.error(status: status, message: message), headers: headers)
        }
    }
}

/// A 5xx's cause, with the request id its answer named.
struct ServerFailure: Error, Sendable {
    var requestID: String
    var error: StorageError

    /// What the client is told instead of the cause.
    static func summary(_ status: Int) -> String {
        switch status {
        case 503: "The service is unavailable; try again"
        case 507: "The server has no room to store this"
        default: "Internal error"
        }
    }
}
