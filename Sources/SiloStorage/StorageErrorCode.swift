import Foundation

/// The error domain Firebase's Apple SDK reports (`(error as NSError).domain`).
public let StorageErrorDomain = "FIRStorageErrorDomain"

/// Firebase's error codes with Firebase's raw values, so `StorageErrorCode(rawValue: (error as NSError).code)`
/// works as in the Firebase documentation.
public enum StorageErrorCode: Int, Error, Sendable, CaseIterable {
    case unknown = -13000
    case objectNotFound = -13010
    case bucketNotFound = -13011
    case projectNotFound = -13012
    case quotaExceeded = -13013
    case unauthenticated = -13020
    case unauthorized = -13021
    case retryLimitExceeded = -13030
    case nonMatchingChecksum = -13031
    case downloadSizeExceeded = -13032
    case cancelled = -13040
    case invalidArgument = -13050
    case bucketMismatch = -13051
    case internalError = -13052
    case pathError = -13053

    /// The code of any error this SDK produced (a `StorageError`, or an `NSError` of `StorageErrorDomain` as
    /// snapshots and completion handlers hand out); `.unknown` for other errors.
    public init(_ error: any Error) {
        if let storage = error as? StorageError {
            self = storage.code
        } else if let code = error as? StorageErrorCode {
            self = code
        } else if case let ns = error as NSError, ns.domain == StorageErrorDomain,
            let code = StorageErrorCode(rawValue: ns.code)
        {
            self = code
        } else {
            self = .unknown
        }
    }
}
