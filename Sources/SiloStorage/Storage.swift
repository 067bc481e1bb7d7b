public import Dispatch
public import Foundation
import Synchronization

/// The entry point, like Firebase's `Storage`. There is no FirebaseApp here: an instance is made from a bucket URL
/// (`gs://bucket`, or `""` for no default bucket) plus optional providers of the Firebase Auth ID token and the App
/// Check token. It talks to production Firebase (`https://firebasestorage.googleapis.com:443`) unless
/// `useEmulator(withHost:port:)` points it at Silo or the Firebase emulator.
public final class Storage: Sendable {
    /// Returns the user's current Firebase ID token, or nil when nobody is signed in. A throw fails the request
    /// with `StorageError.unauthenticated`.
    public typealias IDTokenProvider = @Sendable () async throws -> String?
    /// Returns an App Check token, or nil. A throw is ignored (the request goes without the header).
    public typealias AppCheckTokenProvider = @Sendable () async throws -> String?

    struct Settings: Sendable {
        var maxUploadRetryTime: TimeInterval = 600
        var maxDownloadRetryTime: TimeInterval = 600
        var maxOperationRetryTime: TimeInterval = 120
        var uploadChunkSizeBytes: Int64 = .max
        var callbackQueue: DispatchQueue
        var scheme = "https"
        var host = "firebasestorage.googleapis.com"
        var port = 443
        /// Set by the first reference; `useEmulator` must come before it (as in Firebase).
        var configured = false
    }

    /// The default bucket, without scheme; "" when the instance has none (then any bucket is accepted).
    let bucket: String
    let idTokenProvider: IDTokenProvider?
    let appCheckTokenProvider: AppCheckTokenProvider?
    let transport: any StorageTransport
    let settings: Mutex<Settings>

    /// Makes an instance. `url` is `gs://bucket`, `gs://bucket/` or `""`; anything with an object path traps, as in
    /// Firebase. `transport` defaults to `Storage.defaultTransport()`.
    public init(
        url: String = "", idTokenProvider: IDTokenProvider? = nil, appCheckTokenProvider: AppCheckTokenProvider? = nil,
        transport: (any StorageTransport)? = nil
    ) {
        self.bucket = Storage.bucket(fromURL: url)
        self.idTokenProvider = idTokenProvider
        self.appCheckTokenProvider = appCheckTokenProvider
        self.transport = transport ?? Storage.defaultTransport()
        #if canImport(Darwin)
        let queue = DispatchQueue.main
        #else
        // Server processes on Linux often never run the main queue; callbacks go to a private serial queue.
        let queue = DispatchQueue(label: "silo.storage.callbacks")
        #endif
        self.settings = Mutex(Settings(callbackQueue: queue))
    }

    /// The platform's transport: libcurl (`CurlStorageTransport`) on Linux, where FoundationNetworking's URLSession is
    /// about 5× slower and ignores some cancels; `URLSessionStorageTransport` on Apple platforms.
    public static func defaultTransport() -> any StorageTransport {
        #if canImport(SiloCurl)
        CurlStorageTransport()
        #else
        URLSessionStorageTransport()
        #endif
    }

    static func bucket(fromURL url: String) -> String {
        if url.isEmpty { return "" }
        guard let path = try? StoragePath.parse(url), url.lowercased().hasPrefix("gs://"), path.isRoot else {
            fatalError("Internal Error: Storage bucket cannot be initialized with a path")
        }
        return path.bucket
    }

    private static let instances = Mutex([String: Storage]())

    /// The shared instance for the bucket in the `FIREBASE_STORAGE_BUCKET` environment variable (`gs://…` or a bare
    /// name), standing in for FirebaseApp's `storageBucket` option. Traps when it is not set, as Firebase does.
    public static func storage() -> Storage {
        guard let value = ProcessInfo.processInfo.environment["FIREBASE_STORAGE_BUCKET"] else {
            fatalError("No default Storage bucket found. Did you configure Firebase Storage properly?")
        }
        return storage(url: value.isEmpty || value.lowercased().hasPrefix("gs://") ? value : "gs://\(value)")
    }

    /// The shared instance for `gs://bucket` (one per bucket; repeated calls return the same object and settings).
    /// When `FIREBASE_STORAGE_EMULATOR_HOST` (`host:port`) is set, shared instances start pointed at it.
    public static func storage(url: String) -> Storage {
        let bucket = Storage.bucket(fromURL: url)
        return instances.withLock { cache in
            if let existing = cache[bucket] { return existing }
            let made = Storage(url: url)
            if let emulator = ProcessInfo.processInfo.environment["FIREBASE_STORAGE_EMULATOR_HOST"],
                let colon = emulator.lastIndex(of: ":"), let port = Int(emulator[emulator.index(after: colon)...])
            {
                made.useEmulator(withHost: String(emulator[..<colon]), port: port)
            }
            cache[bucket] = made
            return made
        }
    }

    public var maxUploadRetryTime: TimeInterval {
        get { settings.withLock { $0.maxUploadRetryTime } }
        set { settings.withLock { $0.maxUploadRetryTime = newValue } }
    }
    public var maxDownloadRetryTime: TimeInterval {
        get { settings.withLock { $0.maxDownloadRetryTime } }
        set { settings.withLock { $0.maxDownloadRetryTime = newValue } }
    }
    public var maxOperationRetryTime: TimeInterval {
        get { settings.withLock { $0.maxOperationRetryTime } }
        set { settings.withLock { $0.maxOperationRetryTime = newValue } }
    }
    /// Requested upload chunk size; rounded to the server's `X-Goog-Upload-Chunk-Granularity` (256 KiB if the server
    /// names none): values below it go up to it, values above go down to a multiple. `Int64.max` = one request.
    public var uploadChunkSizeBytes: Int64 {
        get { settings.withLock { $0.uploadChunkSizeBytes } }
        set { settings.withLock { $0.uploadChunkSizeBytes = newValue } }
    }
    /// Where observers and completion handlers run. Default: `.main` on Apple platforms, a private serial queue on
    /// Linux.
    public var callbackQueue: DispatchQueue {
        get { settings.withLock { $0.callbackQueue } }
        set { settings.withLock { $0.callbackQueue = newValue } }
    }

    /// Sends every request to `http://host:port` instead of production. Traps if `host` is empty, `port` is negative
    /// or a reference was already made from this instance (as Firebase does).
    public func useEmulator(withHost host: String, port: Int) {
        guard !host.isEmpty else { fatalError("Invalid host argument: Cannot connect to empty host.") }
        guard port >= 0 else { fatalError("Invalid port argument: Port must be greater or equal to zero.") }
        settings.withLock {
            guard !$0.configured else {
                fatalError(
                    "Cannot connect to emulator after Storage SDK initialization. Call useEmulator(host:port:) before creating a Storage reference or trying to load data."
                )
            }
            $0.scheme = "http"
            $0.host = host
            $0.port = port
        }
    }

    /// Silo's addition: as ``useEmulator(withHost:port:)``, over https when `secure` is true — for a Silo served
    /// with `--tls-cert` (or any emulator behind TLS). A self-signed certificate's CA is trusted through the
    /// transport (``CurlStorageTransport/trustedCertificatesFile``, `SSL_CERT_FILE` on Linux; the keychain on
    /// Apple platforms).
    public func useEmulator(withHost host: String, port: Int, secure: Bool) {
        useEmulator(withHost: host, port: port)
        if secure { settings.withLock { $0.scheme = "https" } }
    }

    /// The root of the default bucket.
    public func reference() -> StorageReference {
        markConfigured()
        return StorageReference(storage: self, path: StoragePath(bucket: bucket))
    }

    /// `reference().child(path)`; never fails.
    public func reference(withPath path: String) -> StorageReference {
        reference().child(path)
    }

    /// A reference from a `gs://` or `http(s)://…/v0/b/…` URL. Traps on a malformed URL or a bucket other than this
    /// instance's; `reference(for:)` throws instead.
    public func reference(forURL url: String) -> StorageReference {
        do {
            return try reference(parsing: url)
        } catch {
            fatalError(error.message)
        }
    }

    /// A reference from a URL; throws `StorageError.pathError` or `.bucketMismatch`.
    public func reference(for url: URL) throws -> StorageReference {
        try reference(parsing: url.absoluteString)
    }

    func reference(parsing url: String) throws(StorageError) -> StorageReference {
        markConfigured()
        let path = try StoragePath.parse(url)
        if !bucket.isEmpty, path.bucket != bucket {
            throw .bucketMismatch(
                message:
                    "Provided bucket: `\(path.bucket)` does not match the Storage bucket of the current instance: `\(bucket)`"
            )
        }
        return StorageReference(storage: self, path: path)
    }

    private func markConfigured() { settings.withLock { $0.configured = true } }
}
