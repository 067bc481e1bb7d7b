import Foundation
import SiloCore
import SiloDisk
import SiloPostgres
import SiloS3
import SiloSQLite

/// Which stores the `.embedded` test server runs on. By default SQLite + disk; `make pairs` runs the server suites
/// again on {SQLite, PostgreSQL} × {disk, S3} with `SILO_TEST_SERVER_METADATA=postgres` and/or
/// `SILO_TEST_SERVER_BLOBS=s3` (plus the service URLs `SILO_TEST_POSTGRES_URL` / `SILO_TEST_S3_URL`).
///
/// Each server gets a PostgreSQL schema and an S3 key prefix named after its temporary directory, so a test that
/// restarts a server on the same directory finds its data again, and parallel tests never see each other's.
enum StorePair {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    static func metadata(_ directory: TemporaryDirectory) throws -> any MetadataStore {
        guard environment["SILO_TEST_SERVER_METADATA"] == "postgres" else {
            // As `silo serve` composes it: the embedded store with its read cache.
            return CachingMetadataStore(try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite"))
        }
        guard let url = environment["SILO_TEST_POSTGRES_URL"] else {
            throw StorageError(.invalidArgument, "SILO_TEST_SERVER_METADATA=postgres needs SILO_TEST_POSTGRES_URL")
        }
        var configuration = PostgresMetadataStore.Configuration()
        configuration.schema = "t_" + tag(directory)
        return try PostgresMetadataStore(url: url, poolSize: 4, configuration: configuration)
    }

    static func blobs(_ directory: TemporaryDirectory) throws -> any BlobStore {
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
