/// The one error type of SiloCore and of every store: a code, a message that names the object, and a cause.
public struct StorageError: ChainedError {
    /// An extensible set of error codes (a struct over a private enum, so adding one is not a breaking change).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Sendable {
            case invalidArgument, notFound, alreadyExists, preconditionFailed, notModified
            case permissionDenied, unauthenticated, rangeNotSatisfiable, conflict
            case ioError, corrupt, unavailable, internalError, cancelled, payloadTooLarge, insufficientStorage
            case tooManyRequests, unimplemented, methodNotAllowed
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }
        public var description: String { wrapped.rawValue }

        public static let invalidArgument = Code(.invalidArgument)
        public static let notFound = Code(.notFound)
        public static let alreadyExists = Code(.alreadyExists)
        public static let preconditionFailed = Code(.preconditionFailed)
        /// A `*NotMatch` precondition held on a read: HTTP 304.
        public static let notModified = Code(.notModified)
        public static let permissionDenied = Code(.permissionDenied)
        public static let unauthenticated = Code(.unauthenticated)
        public static let rangeNotSatisfiable = Code(.rangeNotSatisfiable)
        /// The request conflicts with the resource's state (e.g. a cancelled upload session).
        public static let conflict = Code(.conflict)
        public static let ioError = Code(.ioError)
        public static let corrupt = Code(.corrupt)
        public static let unavailable = Code(.unavailable)
        public static let internalError = Code(.internalError)
        public static let cancelled = Code(.cancelled)
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// The server's disk (or the database's) is full: HTTP 507. A server condition, not the request's fault.
        public static let insufficientStorage = Code(.insufficientStorage)
        /// A per-caller quota (open upload sessions, bytes in flight): HTTP 429.
        public static let tooManyRequests = Code(.tooManyRequests)
        /// A method of the API Silo knowingly does not serve (HTTP 501): the client's fault only in asking.
        public static let unimplemented = Code(.unimplemented)
        /// The resource exists but does not take this method (HTTP 405).
        public static let methodNotAllowed = Code(.methodNotAllowed)
    }

    public var code: Code
    /// Human text; names the bucket/object/path concerned. Never contains tokens or body bytes.
    public var message: String
    public var cause: (any Error & Sendable)?
    public var file: String
    public var line: Int

    public init(
        _ code: Code, _ message: String, cause: (any Error & Sendable)? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.file = file
        self.line = line
    }

}
