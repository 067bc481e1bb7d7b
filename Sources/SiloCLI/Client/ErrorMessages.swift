import Foundation
import SiloStorage

/// What a request was trying to do, for "permission denied by rules for write on gs://b/x".
enum Operation: String, Sendable {
    case read, write, delete, list, update
}

/// Turns SDK, transport and HTTP failures into one line a person can act on.
enum ErrorMessages {
    static func isCancellation(_ error: any Error) -> Bool {
        if error is CancellationError { return true }
        if let storage = error as? StorageError, case .cancelled = storage { return true }
        return false
    }

    /// A description for errors no command translated; never a type dump or stack trace.
    static func describe(_ error: any Error) -> String {
        if let storage = error as? StorageError { return storage.message }
        if let failure = error as? CommandFailure { return failure.message }
        let ns = error as NSError
        if ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain { return ns.localizedDescription }
        return "\(error)"
    }

    /// The failure for `error` raised while doing `operation` on `address` against `endpoint`.
    static func failure(
        _ error: any Error, operation: Operation, address: ObjectAddress?, endpoint: Endpoint
    ) -> any Error {
        if error is CommandFailure || error is ValidationError || error is ExitCode || isCancellation(error) {
            return error
        }
        if let unreachable = unreachable(error, endpoint: endpoint) { return unreachable }
        let target = address.map { "\($0)" } ?? endpoint.base
        if let storage = error as? StorageError {
            switch storage {
            case .objectNotFound: return CommandFailure("object not found: \(target)")
            case .bucketNotFound(let bucket): return CommandFailure("bucket not found: gs://\(bucket)")
            case .unauthorized: return deniedFailure(operation: operation, target: target)
            case .unauthenticated:
                return CommandFailure(
                    "not authenticated for \(operation.rawValue) on \(target): pass a valid --token (or SILO_TOKEN)")
            case .quotaExceeded: return CommandFailure("quota exceeded writing \(target)")
            case .retryLimitExceeded: return CommandFailure("gave up on \(target) after retrying for too long")
            case .nonMatchingChecksum: return CommandFailure("checksum mismatch transferring \(target)")
            case .unknown(_, let info):
                if let status = info["ResponseErrorCode"] as? Int {
                    return httpFailure(
                        status: status, body: Data(((info["ResponseBody"] as? String) ?? "").utf8),
                        operation: operation, address: address, endpoint: endpoint)
                }
                return CommandFailure("\(operation.rawValue) \(target) failed: \(storage.message)")
            default:
                return CommandFailure("\(operation.rawValue) \(target) failed: \(storage.message)")
            }
        }
        return CommandFailure("\(operation.rawValue) \(target) failed: \(describe(error))")
    }

    /// The failure for a non-2xx answer to a request the CLI made itself.
    static func httpFailure(
        status: Int, body: Data, operation: Operation, address: ObjectAddress?, endpoint: Endpoint
    ) -> CommandFailure {
        let target = address.map { "\($0)" } ?? endpoint.base
        switch status {
        case 401:
            return CommandFailure(
                "not authenticated for \(operation.rawValue) on \(target): pass a valid --token (or SILO_TOKEN)")
        case 403: return deniedFailure(operation: operation, target: target)
        case 404: return CommandFailure("object not found: \(target)")
        case 416: return CommandFailure("range not satisfiable for \(target)")
        default:
            return CommandFailure(
                "\(operation.rawValue) \(target) failed: HTTP \(status)\(serverMessage(body).map { ": \($0)" } ?? "")")
        }
    }

    private static func deniedFailure(operation: Operation, target: String) -> CommandFailure {
        CommandFailure("permission denied by rules for \(operation.rawValue) on \(target)")
    }

    /// `error.message` from a Firebase/GCS error body, or a short plain-text body.
    private static func serverMessage(_ body: Data) -> String? {
        if let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let error = object["error"] as? [String: Any], let message = error["message"] as? String
        {
            return message
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty || text.contains("\n") ? nil : text
    }

    /// "cannot reach http://…: connection refused" for connection-level failures, looking through the SDK's wrapper.
    static func unreachable(_ error: any Error, endpoint: Endpoint) -> CommandFailure? {
        var current: (any Error)? = error
        while let candidate = current {
            if let storage = candidate as? StorageError {
                current = storage.serverError["NSUnderlyingError"] as? any Error
                continue
            }
            let ns = candidate as NSError
            guard ns.domain == NSURLErrorDomain else { return nil }
            let reason: String
            switch ns.code {
            case NSURLErrorCannotConnectToHost: reason = "connection refused"
            case NSURLErrorCannotFindHost: reason = "unknown host"
            case NSURLErrorTimedOut: reason = "timed out"
            case NSURLErrorNetworkConnectionLost: reason = "connection lost"
            case NSURLErrorNotConnectedToInternet: reason = "no network"
            default: return nil
            }
            return CommandFailure("cannot reach \(endpoint.base): \(reason)")
        }
        return nil
    }
}
