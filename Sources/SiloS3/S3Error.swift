public import SiloCore

/// The one error type of SiloS3: what failed against which key, the HTTP status and S3 error code when the store
/// answered, and the underlying cause (a libcurl error, say). Converted to ``StorageError`` at the `BlobStore`
/// boundary by ``storageError``.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    /// An extensible set of codes (a struct over a private enum).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Sendable {
            case notFound, accessDenied, unavailable, rejected, invalidResponse, invalidConfiguration
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }
        public var description: String { wrapped.rawValue }

        /// 404: no such key (or bucket).
        public static let notFound = Code(.notFound)
        /// 401/403: bad credentials, a wrong signature or clock, or no permission.
        public static let accessDenied = Code(.accessDenied)
        /// 5xx, throttling, or the endpoint could not be reached; retried before it is reported.
        public static let unavailable = Code(.unavailable)
        /// Any other 4xx: the store refused a request we made.
        public static let rejected = Code(.rejected)
        /// A 2xx whose body or headers are not what the operation must return.
        public static let invalidResponse = Code(.invalidResponse)
        /// The `s3://` URL or the environment does not describe a usable store.
        public static let invalidConfiguration = Code(.invalidConfiguration)
    }

    public var code: Code
    /// Human text naming the operation and the bucket/key. Never contains credentials or body bytes.
    public var message: String
    /// The HTTP status, when the store answered.
    public var status: Int?
    /// S3's `<Code>` (e.g. `NoSuchKey`, `SlowDown`), when the store sent one.
    public var s3Code: String?
    public var cause: (any Error & Sendable)?
    public var file: String
    public var line: Int

    public init(
        _ code: Code, _ message: String, status: Int? = nil, s3Code: String? = nil,
        cause: (any Error & Sendable)? = nil, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.s3Code = s3Code
        self.cause = cause
        self.file = file
        self.line = line
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let status { text += " (HTTP \(status)\(s3Code.map { " \($0)" } ?? ""))" }
        return text
    }

    /// The `StorageError` a `BlobStore` caller sees: 404 → notFound, 403 → permissionDenied, 5xx and connection
    /// failures → unavailable; this error is kept as the cause.
    public var storageError: StorageError {
        let mapped: StorageError.Code =
            switch code {
            case .notFound: .notFound
            case .accessDenied: .permissionDenied
            case .unavailable: .unavailable
            case .invalidConfiguration: .invalidArgument
            case .invalidResponse: .ioError
            default: .internalError
            }
        return StorageError(mapped, description, cause: self, file: file, line: line)
    }
}
