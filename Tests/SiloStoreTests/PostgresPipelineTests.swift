import Foundation
import SiloCore
import Testing

@_spi(Testing) @testable import SiloPostgres

/// Writes whose results nobody reads are queued and sent in one pipeline with the next statement that is read, or
/// with COMMIT (`Connection.queue`): they run in order, a failure among them fails the transaction as it would have
/// at its own turn, and a rollback sends none of them.
@Suite struct PostgresPipelineTests {
    /// A connection to a schema of its own with one table.
    private static func connect(_ schema: PostgresTestSchema) throws -> Connection {
        let connection = try Connection(conninfo: try PostgresURL(schema.url).conninfo, trace: nil)
        try connection.execute(
            """
            CREATE SCHEMA "\(schema.name)"; SET search_path TO "\(schema.name)";
            CREATE TABLE t (k int PRIMARY KEY, v text NOT NULL)
            """)
        return connection
    }

    private static func count(_ connection: Connection) throws -> Int64 {
        try connection.query("SELECT count(*) FROM t").first { try $0.int64(0) } ?? -1
    }

    @Test func queuedWritesRunInOrderBeforeTheNextRead() throws {
        let schema = try PostgresTestSchema()
        let connection = try Self.connect(schema)
        defer { connection.close() }
        let seen = try connection.transaction { _ in
            try connection.queue("INSERT INTO t VALUES ($1, $2)", [.int64(1), .text("a")])
            try connection.queue("UPDATE t SET v = $1 WHERE k = $2", [.text("b"), .int64(1)])
            return try connection.query("SELECT v FROM t WHERE k = $1", [.int64(1)]).first { $0.text(0) }
        }
        #expect(seen == "b")
        try connection.transaction { _ in
            try connection.queue("INSERT INTO t VALUES ($1, $2)", [.int64(2), .text("c")])
        }
        #expect(try Self.count(connection) == 2, "the queue went with COMMIT")
        #expect(connection.isReusable)
    }

    @Test func aFailingQueuedWriteFailsTheCommitAndLeavesNothing() throws {
        let schema = try PostgresTestSchema()
        let connection = try Self.connect(schema)
        defer { connection.close() }
        try connection.transaction { _ in try connection.queue("INSERT INTO t VALUES (1, 'a')") }
        #expect(throws: StorageError.self) {
            try connection.transaction { _ in
                try connection.queue("INSERT INTO t VALUES (2, 'b')")
                try connection.queue("INSERT INTO t VALUES (1, 'duplicate')")
                try connection.queue("INSERT INTO t VALUES (3, 'c')")
            }
        }
        #expect(connection.isReusable, "rolled back: no transaction left open")
        #expect(try Self.count(connection) == 1)
        // The failure carries the server's SQLSTATE, so a retryable one is retried as before.
        let error = #expect(throws: StorageError.self) {
            try connection.transaction { _ in try connection.queue("INSERT INTO t VALUES (1, 'again')") }
        }
        #expect((error?.cause as? PostgresError)?.sqlState == "23505")
    }

    @Test func aRollbackSendsNothingQueued() throws {
        let schema = try PostgresTestSchema()
        let connection = try Self.connect(schema)
        defer { connection.close() }
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try connection.transaction { _ in
                try connection.queue("INSERT INTO t VALUES (1, 'a')")
                throw Refused()
            }
        }
        #expect(connection.isReusable)
        #expect(try Self.count(connection) == 0)
    }

    /// 800 KiB of queued writes, past the 256 KiB a pipeline may carry, so the queue goes in several: every row lands.
    @Test func aQueueOfManyLargeWritesLandsWhole() throws {
        let schema = try PostgresTestSchema()
        let connection = try Self.connect(schema)
        defer { connection.close() }
        let value = String(repeating: "x", count: 4096)
        try connection.transaction { _ in
            for k in 0..<200 {
                try connection.queue("INSERT INTO t VALUES ($1, $2)", [.int64(Int64(k)), .text(value)])
            }
        }
        #expect(try Self.count(connection) == 200)
    }
}
