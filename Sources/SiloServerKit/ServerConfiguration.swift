public import SiloAuth
public import SiloCore
public import SiloHTTP
public import SiloRules

/// Everything the protocol layer needs to know that is not a store. Defaults are what `silo serve` uses.
public struct ServerConfiguration: Sendable {
    /// Buckets served; nil serves any valid name.
    public var buckets: Set<BucketName>?
    /// Whether a v0 upload into a bucket that does not exist creates it, as the Firebase emulator does (`silo serve`
    /// turns it on in emulator mode; `--create-buckets-on-upload` decides). The GCS JSON API never does: it answers
    /// 404 for a bucket that was never created, as GCS does.
    public var createBucketsOnUpload = true
    /// The buckets that exist from the start (`silo serve` makes them before serving); `POST /internal/reset` makes
    /// them again, so that after it the server is as if freshly started.
    public var defaultBuckets: [BucketName] = []
    /// Where rules set with `PUT /internal/setRules` count their decisions (the same counters as rules from files).
    public var rulesStatistics: RulesStatistics?
    /// Upload granularity advertised to resumable clients (GTM rounds chunk sizes to it).
    public var chunkGranularity = 262_144
    /// Bodies parsed as JSON (metadata, resumable start) are refused beyond this size.
    public var maxJSONBodyBytes = 1 << 20
    /// A batch request (`POST /batch/storage/v1`) holds at most this many calls (GCS's limit: 100), ...
    public var maxBatchCalls = 100
    /// ...in a body of at most this many bytes (413 beyond): room for 100 calls with several KiB of JSON each. Each
    /// call's own body is still bounded by `maxJSONBodyBytes`, as it would be outside a batch.
    public var maxBatchBodyBytes = 8 << 20
    /// Once the answers of a batch's calls add up to more than this, its remaining calls are not run and answer 400
    /// in their parts (a batch of 100 metadata calls answers in well under 1 MiB; this bounds 100 large listings).
    public var maxBatchResponseBytes = 32 << 20
    /// Objects up to this size are read into memory and sent from there; larger ones go through sendfile.
    public var inlineDownloadLimit: Int64 = 64 << 10
    /// Memory kept for the bytes of recently read objects up to `inlineDownloadLimit` (0 turns the cache off).
    public var smallBlobCacheBytes = 4 << 20
    /// Versions whose download headers and v0 metadata JSON are kept ready (about 2 KiB each; 0 turns it off).
    public var versionResponseCacheEntries = 2048
    /// …and at most this many bytes in each of its two parts (headers, JSON).
    public var versionResponseCacheBytes = 8 << 20
    /// Upload sessions untouched for this long expire (GCS keeps them a week).
    public var sessionLifetimeSeconds: Int64 = 7 * 24 * 3600
    /// A pending blob younger than this is never collected by the periodic pass (longer than any single request can
    /// take); `silo serve` passes it to ``SiloServerApp/collectGarbage(graceSeconds:now:)``. At least 0.
    public var garbageGraceSeconds: Int64 = 24 * 3600
    /// How often `silo serve` runs that pass (the first one this long after startup). At least 1.
    public var maintenanceIntervalSeconds: Double = 300
    /// Emulator mode: the GCS JSON API serves every caller as the admin, as the Firebase emulator does (its GCS
    /// clients cannot send `owner`). Off, the GCS JSON API needs admin credentials.
    public var openAdminAPI = true
    /// Reject v0 uploads whose JSON `md5Hash` does not match the data (off by default: iOS re-sends old hashes).
    public var strictV0Checksums = false
    /// The largest object accepted (413 beyond it), checked against declared sizes before any byte is stored and
    /// against the bytes as they arrive. GCS's own limit, 5 TiB, by default.
    public var maxObjectSize: Int64 = 5 << 40
    /// Per-caller quotas on resumable uploads (a signed-in user by uid, anyone else by IP address; admins are
    /// exempt), counting active sessions touched within `sessionQuotaWindowSeconds`: more sessions than this, or
    /// more bytes held in them than `maxPendingBytesPerCaller`, and the next start or chunk is refused with 429.
    public var maxSessionsPerCaller = 1000
    public var maxPendingBytesPerCaller: Int64 = 64 << 30
    /// Abandoned sessions stop counting against their caller after this long (they expire after
    /// `sessionLifetimeSeconds`).
    public var sessionQuotaWindowSeconds: Int64 = 24 * 3600
    /// Registered service accounts (`--service-account`): their access tokens, signed URLs and POST policies are
    /// accepted on the GCS APIs and IAM decides what they may do. Nil: none registered — signed URLs are refused,
    /// or in emulator mode (`openAdminAPI`) checked in everything but their signature.
    public var serviceAccounts: ServiceAccountAuthority?
    /// Peers whose `X-Forwarded-Host` and `X-Forwarded-Proto` say how the client addressed the request
    /// (`--trusted-proxies`); from anyone else those headers are ignored. Empty: none (``EdgePolicy``).
    public var trustedProxies: [PeerNetwork] = []
    /// Addresses clients reach this server at besides the one it listens on (`--public-url`): signed URLs and token
    /// assertions made for them are accepted (``EdgePolicy``).
    public var publicURLs: [PublicURL] = []
    /// Bytes of gzip objects one caller may make the server inflate (decompressive transcoding, for a client that
    /// does not accept gzip) per minute on this node, a user by uid and anyone else by IP address, admins exempt;
    /// beyond it a transcoding download is refused with 429, or cut off when it runs the budget dry (0: no limit).
    public var maxInflatedBytesPerCallerPerMinute: Int64 = 1 << 30
    /// XML API multipart uploads in progress in one bucket (touched within `sessionQuotaWindowSeconds`); the next
    /// initiate beyond it is refused with 429. Each holds at most 10 000 parts of at most 5 GiB.
    public var maxMultipartUploadsPerBucket = 10_000

    /// Host names under which `{bucket}.{suffix}` addresses a bucket in the XML API's virtual-host style (lowercase,
    /// no port); empty turns that style off. `storage.googleapis.com` for clients whose hosts file points it here,
    /// `localhost` because `*.localhost` reaches the loopback address without any setup (RFC 6761 §6.3).
    public var virtualHostSuffixes = ["storage.googleapis.com", "localhost"]
    /// Thumbnails on demand and on upload (presets); off unless a transformer is set and buckets are listed.
    public var images = ImageSettings()

    /// How long `/readyz` waits for the stores to answer before it answers 503.
    public var readinessTimeoutSeconds: Double = 2

    public init() {}
}
