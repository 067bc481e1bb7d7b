import Foundation
import SiloCore
import SiloSQLite

/// Every MetadataStore the conformance suite runs against.
enum MetadataBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, sqlite

    var description: String { rawValue }

    func open(clock: TestClock = TestClock()) throws -> MetadataFixture {
        switch self {
        case .memory:
            return MetadataFixture(store: InMemoryMetadataStore(now: { clock.now() }), clock: clock, reopenStore: nil)
        case .sqlite:
            let directory = try TempDirectory()
            let path = directory.path + "/metadata.sqlite"
            var configuration = SQLiteMetadataStore.Configuration()
            configuration.now = { clock.now() }
            let fixture = MetadataFixture(
                store: try SQLiteMetadataStore(path: path, configuration: configuration), clock: clock,
                reopenStore: { old in
                    (old as? SQLiteMetadataStore)?.close()
                    return try SQLiteMetadataStore(path: path, configuration: configuration)
                })
            fixture.keepAlive.append(directory)
            return fixture
        }
    }
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
