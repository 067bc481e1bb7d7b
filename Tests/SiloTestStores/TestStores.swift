import Foundation
public import SiloAuth
public import SiloCore
import SiloDisk
import SiloPostgres
import SiloS3
import SiloSQLite
import SiloServer
public import SiloServerKit
public import SiloTesting

/// The stores this repository's test suites run their servers on. Test support only, not a product: which stores
/// `silo serve` runs on is decided by the executable alone (`SiloMain/Backends.swift`), and this is not that
/// decision, only the suites' own.
///
/// `.embedded` is SQLite with a read cache in front and the local disk, in a temporary directory; `make pairs` runs
/// the server suites again on {SQLite, PostgreSQL} × {disk, S3} with `SILO_TEST_SERVER_METADATA=postgres` and/or
/// `SILO_TEST_SERVER_BLOBS=s3` (plus the service URLs `SILO_TEST_POSTGRES_URL` / `SILO_TEST_S3_URL`). `.memory` is
/// SiloCore's in-memory reference stores.
///
/// Each server gets a PostgreSQL schema and an S3 key prefix named after its temporary directory, so a test that
/// restarts a server on the same directory finds its data again, and parallel tests never see each other's.
public enum TestStores {
    public enum Backend: String, Sendable, CaseIterable {
        case embedded
        case memory
    }

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    public static func metadata(_ directory: TemporaryDirectory) throws -> any MetadataStore {
        guard environment["SILO_TEST_SERVER_METADATA"] == "postgres" else {
            return CachingMetadataStore(try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite"))
        }
        guard let url = environment["SILO_TEST_POSTGRES_URL"] else {
            throw StorageError(.invalidArgument, "SILO_TEST_SERVER_METADATA=postgres needs SILO_TEST_POSTGRES_URL")
        }
        var configuration = PostgresMetadataStore.Configuration()
        configuration.schema = "t_" + tag(directory)
        return try PostgresMetadataStore(url: url, poolSize: 4, configuration: configuration)
    }

    public static func blobs(_ directory: TemporaryDirectory) throws -> any BlobStore {
        guard environment["SILO_TEST_SERVER_BLOBS"] == "s3" else {
            return try DiskBlobStore(root: directory.path + "/blobs")
        }
        guard let url = environment["SILO_TEST_S3_URL"], let query = url.firstIndex(of: "?") else {
            throw StorageError(.invalidArgument, "SILO_TEST_SERVER_BLOBS=s3 needs SILO_TEST_S3_URL")
        }
        return try S3BlobStore(url: String(url[..<query]) + "/t-" + tag(directory) + String(url[query...]))
    }

    /// The temporary directory's unique suffix, lowercased (valid as a schema name and a key prefix).
    private static func tag(_ directory: TemporaryDirectory) -> String {
        String(directory.path.split(separator: "-").last ?? "x").lowercased().filter { $0.isLetter || $0.isNumber }
    }
}

extension TestServer {
    public typealias Backend = TestStores.Backend

    /// A test server on `backend`'s stores (``TestStores``): `.embedded` in `directory` (a new one by default;
    /// pass a server's `directory` to restart on its data), with `blobStore` in place of the usual blob store if
    /// given; `.memory` keeps nothing on disk.
    public convenience init(
        _ transport: Transport = .socket, backend: Backend = .embedded,
        configuration: ServerConfiguration = ServerConfiguration(),
        policy: any AccessPolicy = AllowAllPolicy(), credentials: any CredentialVerifier = TokenVerifier.emulator,
        directory reuse: TemporaryDirectory? = nil, hooks: StoreCallHooks? = nil, logger: Logger = .disabled,
        blobStore: ((TemporaryDirectory) throws -> any BlobStore)? = nil, testFaults: Bool = false,
        threads: Int = 4, observability: Observability = Observability(),
        tls: TLSOption = .none
    ) throws {
        let metadata: any MetadataStore
        let blobs: any BlobStore
        let directory: TemporaryDirectory?
        switch backend {
        case .embedded:
            let reused = try reuse ?? TemporaryDirectory()
            directory = reused
            metadata = try TestStores.metadata(reused)
            blobs = try blobStore?(reused) ?? TestStores.blobs(reused)
        case .memory:
            directory = nil
            metadata = InMemoryMetadataStore()
            blobs = InMemoryBlobStore()
        }
        try self.init(
            transport, metadata: metadata, blobs: blobs, directory: directory, configuration: configuration,
            policy: policy,
            credentials: credentials, hooks: hooks, logger: logger, testFaults: testFaults,
            threads: threads, observability: observability, tls: tls)
    }
}
