public import Foundation

/// Firebase's `StorageError`, with the same cases and payload labels, so `catch StorageError.objectNotFound(let
/// object, _)` and `(error as NSError).code` both work. Unlike Firebase, the server-error payload is
/// `[String: any Sendable]`, which makes the whole error `Sendable`.
public enum StorageError: Error, Sendable, CustomNSError, CustomStringConvertible, LocalizedError {
    case unknown(message: String, serverError: [String: any Sendable])
    case objectNotFound(object: String, serverError: [String: any Sendable])
    case bucketNotFound(bucket: String)
    case projectNotFound(project: String)
    case quotaExceeded(bucket: String, serverError: [String: any Sendable])
    case unauthenticated(serverError: [String: any Sendable])
    case unauthorized(bucket: String, object: String, serverError: [String: any Sendable])
    case retryLimitExceeded
    case nonMatchingChecksum
    case downloadSizeExceeded(total: Int64, maxSize: Int64)
    case cancelled
    case invalidArgument(message: String)
    case internalError(message: String)
    case bucketMismatch(message: String)
    case pathError(message: String)

    public var code: StorageErrorCode {
        switch self {
        case .unknown: .unknown
        case .objectNotFound: .objectNotFound
        case .bucketNotFound: .bucketNotFound
        case .projectNotFound: .projectNotFound
        case .quotaExceeded: .quotaExceeded
        case .unauthenticated: .unauthenticated
        case .unauthorized: .unauthorized
        case .retryLimitExceeded: .retryLimitExceeded
        case .nonMatchingChecksum: .nonMatchingChecksum
        case .downloadSizeExceeded: .downloadSizeExceeded
        case .cancelled: .cancelled
        case .invalidArgument: .invalidArgument
        case .internalError: .internalError
        case .bucketMismatch: .bucketMismatch
        case .pathError: .pathError
        }
    }

    /// The human text Firebase puts under `NSLocalizedDescriptionKey`.
    public var message: String {
        switch self {
        case .unknown(let message, _), .invalidArgument(let message), .internalError(let message),
            .bucketMismatch(let message), .pathError(let message):
            message
        case .objectNotFound(let object, _): "Object \(object) does not exist."
        case .bucketNotFound(let bucket): "Bucket \(bucket) does not exist."
        case .projectNotFound(let project): "Project \(project) does not exist."
        case .quotaExceeded(let bucket, _):
            "Quota for bucket \(bucket) exceeded, please view quota on firebase.google.com."
        case .unauthenticated:
            "User is not authenticated, please authenticate using Firebase Authentication and try again."
        case .unauthorized(let bucket, let object, _):
            "User does not have permission to access gs://\(bucket)/\(object)."
        case .retryLimitExceeded: "Max retry time for operation exceeded, please try again."
        case .nonMatchingChecksum:
            "Uploaded/downloaded object has a checksum that does not match the one computed locally."
        case .downloadSizeExceeded(let total, let maxSize):
            "Attempted to download object with size of \(total) bytes, which exceeds the maximum size of \(maxSize) bytes. "
                + "Consider raising the maximum download maxSize, or using StorageReference.write"
        case .cancelled: "User cancelled the upload/download."
        }
    }

    /// Server details: `ResponseErrorDomain`, `ResponseErrorCode` (HTTP status), `ResponseBody`, `bucket`, `object`,
    /// and `NSUnderlyingError` for transport failures.
    public var serverError: [String: any Sendable] {
        switch self {
        case .unknown(_, let s), .objectNotFound(_, let s), .quotaExceeded(_, let s), .unauthenticated(let s),
            .unauthorized(_, _, let s):
            s
        default: [:]
        }
    }

    public static var errorDomain: String { StorageErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [:]
        for (key, value) in serverError { info[key] = value }
        if case .downloadSizeExceeded(let total, let maxSize) = self {
            info["totalSize"] = total
            info["maxAllowedSize"] = maxSize
        }
        info[NSLocalizedDescriptionKey] = message
        return info
    }

    public var errorDescription: String? { message }
    public var description: String { "StorageError.\(code)(\(message))" }
}
