import SiloCore
import SiloDisk
import SiloPostgres
import SiloS3
import SiloSQLite

/// Chooses the stores from `--metadata` and `--blobs`: the only place that knows every backend.
enum Backends {
    /// One SQLite page (docs/architecture-notes.md, "Small objects inline").
    static let defaultInlineLimit = 4096
    /// Rows this large still fit a PostgreSQL page; SQLite's spill into overflow pages, at no gain over a file.
    static let maxInlineLimit = 8000

    /// `recordsEvents`: object writes also fill the event outbox (only when something delivers it).
    /// `inlineLimit`: the largest object whose bytes the store keeps itself.
    static func metadata(
        _ url: String?, dataDirectory: String, recordsEvents: Bool = false, inlineLimit: Int = defaultInlineLimit,
        logger: Logger = .disabled
    ) throws -> any MetadataStore {
        let url = url ?? "sqlite:\(dataDirectory)/metadata.sqlite"
        if url.hasPrefix("sqlite:") {
            // This process owns the database (the lock makes sure), so reads of live objects can be cached.
            var configuration = SQLiteMetadataStore.Configuration()
            configuration.lockAgainstOtherProcesses = true
            configuration.recordsEvents = recordsEvents
            configuration.inlineBlobLimit = inlineLimit
            let path = String(url.dropFirst("sqlite:".count))
            return CachingMetadataStore(try SQLiteMetadataStore(path: path, configuration: configuration))
        }
        if PostgresMetadataStore.handles(url) {
            var configuration = PostgresMetadataStore.Configuration()
            configuration.recordsEvents = recordsEvents
            configuration.inlineBlobLimit = inlineLimit
            configuration.logger = logger
            let store = try PostgresMetadataStore(url: url, configuration: configuration)
            // Shared by any number of nodes: the cache answers only while the writer lease says this node runs alone.
            let cache = CachingMetadataStore(store, soleWriter: false)
            try store.startWriterLease(notifying: cache)
            return cache
        }
        throw StorageError(.invalidArgument, "--metadata must be sqlite:PATH or postgres://…, not \(redacted(url))")
    }

    /// The store's own metrics, where it has some (SQLite: its commits and commit groups).
    static func metrics(of store: any MetadataStore) -> (any MetricsSource)? {
        let inner = (store as? CachingMetadataStore)?.inner ?? store
        return inner as? SQLiteMetadataStore
    }

    /// Whether other processes may write the metadata store `url` names at the same time (PostgreSQL, shared by
    /// nodes); SQLite is locked to one process.
    static func sharesMetadata(_ url: String?) -> Bool {
        url.map(PostgresMetadataStore.handles) ?? false
    }

    static func blobs(_ url: String?, dataDirectory: String) throws -> any BlobStore {
        let url = url ?? "file:\(dataDirectory)/blobs"
        if url.hasPrefix("file:") { return try DiskBlobStore(root: String(url.dropFirst("file:".count))) }
        if url.hasPrefix("s3://") {
            let store = try S3BlobStore(url: url)
            try store.checkBucket()
            return store
        }
        throw StorageError(
            .invalidArgument, "--blobs must be file:PATH or s3://bucket?endpoint=…, not \(redacted(url))")
    }

    /// URLs can carry passwords: show the scheme only.
    private static func redacted(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":") else { return "this value" }
        return String(url[...colon]) + "…"
    }
}
