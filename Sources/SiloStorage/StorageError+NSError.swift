public import Foundation

/// Firebase hands out `NSError`s (domain `FIRStorageErrorDomain`) from task snapshots and completion handlers, and
/// `StorageError`s from the async API; code written for it casts both ways. On Apple platforms the runtime bridges a
/// Swift error to `NSError` and back. swift-corelibs-foundation does not: there `error as? NSError` is nil for a Swift
/// enum and `nsError as? StorageError` is nil for an `NSError`. The pieces below close both gaps on Linux.
extension StorageError {
    /// The `NSError` Firebase would hand out for this error: domain, code and `userInfo` as `CustomNSError` gives
    /// them. On Linux it is a `StorageNSError`, which remembers this value so `as? StorageError` gets it back.
    var nsError: NSError {
        #if canImport(Darwin)
        self as NSError
        #else
        StorageNSError(self)
        #endif
    }

    /// The value an `NSError` of Firebase's domain stands for: the remembered one for a `StorageNSError`, else one
    /// rebuilt from the code and `userInfo` (the message from `NSLocalizedDescriptionKey`, the rest as the server
    /// payload). Nil for other domains and unknown codes.
    init?(bridging error: NSError) {
        if let own = error as? StorageNSError {
            self = own.storageError
            return
        }
        guard error.domain == StorageErrorDomain, let code = StorageErrorCode(rawValue: error.code) else { return nil }
        var info: [String: any Sendable] = [:]
        for (key, value) in error.userInfo where key != NSLocalizedDescriptionKey {
            switch value {
            case let v as String: info[key] = v
            case let v as Int: info[key] = v
            case let v as Int64: info[key] = v
            case let v as Data: info[key] = v
            case let v as NSError: info[key] = v
            default: continue
            }
        }
        let message = error.userInfo[NSLocalizedDescriptionKey] as? String ?? ""
        let bucket = error.userInfo["bucket"] as? String ?? ""
        let object = error.userInfo["object"] as? String ?? StorageError.noObjectPlaceholder
        switch code {
        case .unknown: self = .unknown(message: message, serverError: info)
        case .objectNotFound: self = .objectNotFound(object: object, serverError: info)
        case .bucketNotFound: self = .bucketNotFound(bucket: bucket)
        case .projectNotFound: self = .projectNotFound(project: error.userInfo["project"] as? String ?? "")
        case .quotaExceeded: self = .quotaExceeded(bucket: bucket, serverError: info)
        case .unauthenticated: self = .unauthenticated(serverError: info)
        case .unauthorized: self = .unauthorized(bucket: bucket, object: object, serverError: info)
        case .retryLimitExceeded: self = .retryLimitExceeded
        case .nonMatchingChecksum: self = .nonMatchingChecksum
        case .downloadSizeExceeded:
            self = .downloadSizeExceeded(
                total: (error.userInfo["totalSize"] as? Int64) ?? 0,
                maxSize: (error.userInfo["maxAllowedSize"] as? Int64) ?? 0)
        case .cancelled: self = .cancelled
        case .invalidArgument: self = .invalidArgument(message: message)
        case .internalError: self = .internalError(message: message)
        case .bucketMismatch: self = .bucketMismatch(message: message)
        case .pathError: self = .pathError(message: message)
        }
    }

    /// `error` as the async API throws it: a `StorageError` when it is one (or an `NSError` standing for one).
    static func unwrapped(_ error: any Error) -> any Error {
        if let storage = error as? StorageError { return storage }
        if let rebuilt = StorageError(bridging: error as NSError) { return rebuilt }
        return error
    }
}

/// The `NSError` SiloStorage hands out for a `StorageError`: Firebase's domain, code and `userInfo`, plus the value
/// itself, so `catch StorageError.x`, `as? StorageError` and `as? NSError` all work on every platform.
final class StorageNSError: NSError, @unchecked Sendable {
    let storageError: StorageError

    init(_ error: StorageError) {
        storageError = error
        super.init(domain: StorageErrorDomain, code: error.errorCode, userInfo: error.errorUserInfo)
    }

    required init?(coder: NSCoder) { nil }
}

#if !canImport(Darwin)
/// Lets the Linux runtime cast between `StorageError` and `NSError` the way Apple's runtime does: `error as? NSError`
/// on a thrown `StorageError` succeeds, and so do `as? StorageError` and `catch StorageError.x` on the `NSError`s
/// from snapshots and completion handlers. (`_ObjectiveCBridgeable` is how swift-corelibs-foundation bridges its own
/// value types, like `String`/`NSString`, on Linux.)
extension StorageError: _ObjectiveCBridgeable {
    public typealias _ObjectiveCType = NSError

    public func _bridgeToObjectiveC() -> NSError { StorageNSError(self) }

    public static func _forceBridgeFromObjectiveC(_ source: NSError, result: inout StorageError?) {
        result = StorageError(bridging: source)
    }

    public static func _conditionallyBridgeFromObjectiveC(_ source: NSError, result: inout StorageError?) -> Bool {
        result = StorageError(bridging: source)
        return result != nil
    }

    public static func _unconditionallyBridgeFromObjectiveC(_ source: NSError?) -> StorageError {
        source.flatMap { StorageError(bridging: $0) } ?? .internalError(message: "Not a Storage error")
    }
}
#endif
