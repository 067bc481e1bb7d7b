import Foundation
import SiloCore
@_spi(Testing) import SiloPostgres
import SiloSQLite
import Testing

/// Every MetadataStore the conformance suite runs against.
///
/// `postgres` runs when `SILO_TEST_POSTGRES_URL` names a server (`make postgres-test` starts one); otherwise its
/// cases are skipped with that reason. Each case gets a schema of its own, dropped afterwards.
enum MetadataBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    /// `cachedSQLite` is what `silo serve` runs: SQLite behind the read cache for live objects.
    case memory, sqlite, cachedSQLite, postgres

    var description: String { rawValue }

    /// `events`: the store records storage events in its outbox.
    func open(clock: TestClock = TestClock(), events: Bool = false) throws -> MetadataFixture {
        switch self {
        case .memory:
            return MetadataFixture(
                store: InMemoryMetadataStore(now: { clock.now() }, recordsEvents: events, inlineBlobLimit: 4096),
                clock: clock,
                reopenStore: nil)
        case .sqlite:
            let directory = try TempDirectory()
            let path = directory.path + "/metadata.sqlite"
            var configuration = SQLiteMetadataStore.Configuration()
            configuration.now = { clock.now() }
            configuration.recordsEvents = events
            let fixture = MetadataFixture(
                store: try SQLiteMetadataStore(path: path, configuration: configuration), clock: clock,
                reopenStore: { old in
                    (old as? SQLiteMetadataStore)?.close()
                    return try SQLiteMetadataStore(path: path, configuration: configuration)
                })
            fixture.keepAlive.append(directory)
            return fixture
        case .cachedSQLite:
            let directory = try TempDirectory()
            let path = directory.path + "/metadata.sqlite"
            var configuration = SQLiteMetadataStore.Configuration()
            configuration.now = { clock.now() }
            configuration.lockAgainstOtherProcesses = true
            configuration.recordsEvents = events
            let fixture = MetadataFixture(
                store: CachingMetadataStore(try SQLiteMetadataStore(path: path, configuration: configuration)),
                clock: clock,
                reopenStore: { old in
                    ((old as? CachingMetadataStore)?.inner as? SQLiteMetadataStore)?.close()
                    return CachingMetadataStore(try SQLiteMetadataStore(path: path, configuration: configuration))
                })
            fixture.keepAlive.append(directory)
            return fixture
        case .postgres:
            let schema = try PostgresTestSchema()
            var configuration = schema.configuration
            configuration.now = { clock.now() }
            configuration.recordsEvents = events
            let fixture = MetadataFixture(
                store: try schema.open(configuration), clock: clock,
                reopenStore: { old in
                    (old as? PostgresMetadataStore)?.close()
                    return try schema.open(configuration)
                })
            fixture.keepAlive.append(schema)
            return fixture
        }
    }
}

/// A schema of its own in the database `SILO_TEST_POSTGRES_URL` names, dropped when released.
final class PostgresTestSchema: Sendable {
    static let environmentVariable = "SILO_TEST_POSTGRES_URL"

    /// The server's URL, or nil when the environment names none.
    static var url: String? {
        ProcessInfo.processInfo.environment[environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    let url: String
    let name: String

    /// Skips the current test (case) when no server is configured.
    init() throws {
        guard let url = Self.url else {
            try Test.cancel("\(Self.environmentVariable) is not set: no PostgreSQL server to test against")
        }
        self.url = url
        name = "silo_test_" + (0..<12).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
    }

    var configuration: PostgresMetadataStore.Configuration {
        var configuration = PostgresMetadataStore.Configuration()
        configuration.schema = name
        configuration.checkoutTimeout = .seconds(60)
        return configuration
    }

    func open(_ configuration: PostgresMetadataStore.Configuration? = nil, poolSize: Int = 4) throws
        -> PostgresMetadataStore
    {
        try PostgresMetadataStore(url: url, poolSize: poolSize, configuration: configuration ?? self.configuration)
    }

    deinit { try? PostgresMetadataStore.dropSchema(name, url: url) }
}

/// A store under test, plus what it needs to outlive it (its directory) and reopen it.
final class MetadataFixture {
    private(set) var store: any MetadataStore
    let clock: TestClock
    private let reopenStore: ((any MetadataStore) throws -> any MetadataStore)?
    var keepAlive: [AnyObject] = []

    init(store: any MetadataStore, clock: TestClock, reopenStore: ((any MetadataStore) throws -> any MetadataStore)?) {
        self.store = store
        self.clock = clock
        self.reopenStore = reopenStore
    }

    var canReopen: Bool { reopenStore != nil }

    /// Closes the store and opens it again on the same storage.
    func reopen() throws {
        guard let reopenStore else { return }
        store = try reopenStore(store)
    }
}
